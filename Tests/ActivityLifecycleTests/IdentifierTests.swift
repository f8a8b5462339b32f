import ActivityLifecycle
import Foundation
import Testing

@Suite("Identifiers and relevance scores")
struct IdentifierTests {
    @Test(
        "1–128 characters of A-Z a-z 0-9 . _ : -",
        arguments: ["a", "Order-42", "com.example:live_1", String(repeating: "x", count: 128)]
    )
    func valid(text: String) {
        #expect(ActivityID(rawValue: text)?.rawValue == text)
        #expect(AppID(rawValue: text) != nil)
    }

    @Test(
        "anything else is refused, and U+0000, which PostgreSQL cannot store",
        arguments: ["", String(repeating: "x", count: 129), "a b", "a/b", "é", "a\n", "a%20", "😀"]
    )
    func invalid(text: String) {
        #expect(ActivityID(rawValue: text) == nil)
        #expect(DeviceID(rawValue: text) == nil)
    }

    @Test("decoding an invalid identifier fails with the rule")
    func decoding() {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([ActivityID].self, from: Data(#"["a b"]"#.utf8))
        }
    }

    @Test("relevance scores are finite and not negative")
    func relevance() {
        #expect(RelevanceScore(0) != nil)
        #expect(RelevanceScore(12.5) != nil)
        #expect(RelevanceScore(-0.1) == nil)
        #expect(RelevanceScore(.infinity) == nil)
        #expect(RelevanceScore(.nan) == nil)
    }
}
