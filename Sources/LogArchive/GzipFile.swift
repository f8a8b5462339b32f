import CompressNIO
import Crypto
import NIOCore

/// Writes a gzip-compressed file from pieces of any size, and counts the compressed bytes and
/// their SHA-256 as they go to the file.
final class GzipFileWriter {
    private static let pieceSize = 256 * 1024
    private let file: ArchiveFile
    private let compressor: any NIOCompressor
    private var pending: ByteBuffer
    private var hash = SHA256()
    private var bytes = 0

    init(creating path: String) throws {
        file = try ArchiveFile.create(path)
        compressor = CompressionAlgorithm.gzip().compressor
        compressor.window = ByteBufferAllocator().buffer(capacity: Self.pieceSize)
        try compressor.startStream()
        pending = ByteBufferAllocator().buffer(capacity: Self.pieceSize)
    }

    func write(_ piece: UnsafeRawBufferPointer) throws {
        pending.writeBytes(piece)
        if pending.readableBytes >= Self.pieceSize { try compress(flush: .no) }
    }

    /// Compresses what is left, flushes the file to disk, and returns its size and SHA-256.
    func finish() throws -> (bytes: Int, sha256: String) {
        try compress(flush: .finish)
        try compressor.finishStream()
        try file.flush()
        return (bytes, hash.finalize().hex)
    }

    private func compress(flush: CompressNIOFlush) throws {
        var written: [ByteBuffer] = []
        try pending.compressStream(with: compressor, flush: flush) { written.append($0) }
        pending.clear()
        for piece in written {
            try piece.withUnsafeReadableBytes { bytes in
                hash.update(bufferPointer: bytes)
                try file.write(bytes)
            }
            bytes += piece.readableBytes
        }
    }
}

/// Reads a gzip-compressed file, handing its decompressed bytes to `consume` in pieces, and
/// returns the compressed size and SHA-256, which the caller compares with the manifest's.
enum GzipFileReader {
    static func read(
        _ path: String,
        consume: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> (bytes: Int, sha256: String) {
        let file = try ArchiveFile.open(path)
        let decompressor = CompressionAlgorithm.gzip().decompressor
        decompressor.window = ByteBufferAllocator().buffer(capacity: 1024 * 1024)
        try decompressor.startStream()
        var hash = SHA256()
        var total = 0
        var input = ByteBufferAllocator().buffer(capacity: 256 * 1024)
        while true {
            input.clear()
            let read = try input.writeWithUnsafeMutableBytes(minimumWritableBytes: 256 * 1024) {
                try file.read(into: $0)
            }
            if read == 0 { break }
            total += read
            input.withUnsafeReadableBytes { hash.update(bufferPointer: $0) }
            try input.decompressStream(with: decompressor) { output in
                try output.withUnsafeReadableBytes(consume)
            }
        }
        try decompressor.finishStream()
        return (total, hash.finalize().hex)
    }
}
