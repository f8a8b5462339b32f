import Foundation
import LogArchive
import PropertyBased
import PropertyChecks
import Testing

@Suite("Reading PostgreSQL's CSV")
struct CSVRecordsTests {
    /// A field as PostgreSQL's `COPY … (FORMAT csv)` writes it: NULL unquoted and empty; the
    /// empty text, and text with a comma, a quote or a line break, in quotes with quotes doubled.
    static func written(_ field: String?) -> String {
        guard let field else { return "" }
        guard field.isEmpty || field.unicodeScalars.contains(where: { ",\"\n\r".unicodeScalars.contains($0) })
        else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func read(_ text: String, inPiecesOf size: Int) throws -> [[String?]] {
        var reader = CSVRecords()
        var records: [[String?]] = []
        let bytes = Array(text.utf8)
        for start in stride(from: 0, to: bytes.count, by: size) {
            try bytes[start..<min(start + size, bytes.count)].withUnsafeBytes { piece in
                try reader.feed(piece) { records.append($0) }
            }
        }
        try reader.finish()
        return records
    }

    @Test("records read back as written, NULL apart from the empty text, in pieces of any size")
    func roundTrip() async {
        // NULL, the empty text, letters, and text that must be quoted.
        let shapes: [String?] = [nil, "", "a,b", "say \"hi\"", "two\nlines", "\r\n", "\"", ",", "é😀", "{\"k\": [1]}"]
        let text = Gen.int(in: 0...shapes.count * 2).map { index -> String? in
            index < shapes.count ? shapes[index] : "w\(index)"
        }
        await checkProperty(count: 300, input: text.array(of: 1...5).array(of: 0...8), Gen.int(in: 1...17)) {
            records,
            pieceSize in
            let csv = records.map { $0.map(Self.written).joined(separator: ",") + "\n" }.joined()
            let read = try Self.read(csv, inPiecesOf: pieceSize)
            #expect(read == records)
        }
    }

    @Test("text after a closing quote, and input that ends inside a record, are refused")
    func malformed() {
        #expect(throws: CSVRecords.Malformed.self) { try Self.read("\"a\"b\n", inPiecesOf: 3) }
        #expect(throws: CSVRecords.Malformed.self) { try Self.read("a,\"b\n", inPiecesOf: 3) }
        #expect(throws: CSVRecords.Malformed.self) { try Self.read("a,b", inPiecesOf: 3) }
    }
}
