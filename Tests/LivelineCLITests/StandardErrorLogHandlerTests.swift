import LivelineCLI
import Logging
import Synchronization
import Testing

@Suite("Logging to standard error")
struct StandardErrorLogHandlerTests {
    /// A stream that keeps what is written to it.
    final class Captured: TextOutputStream, Sendable {
        private let text = Mutex("")
        var lines: [Substring] { text.withLock { $0 }.split(separator: "\n") }
        func write(_ string: String) { text.withLock { $0 += string } }
    }

    @Test("a message carries the logger's metadata as it was when the message was logged, over the message's own")
    func metadataAtLogTime() {
        let captured = Captured()
        var logger = Logger(label: "liveline") { label in
            var handler = StandardErrorLogHandler(
                output: StreamLogHandler(label: label, stream: captured, metadataProvider: nil)
            )
            handler.logLevel = .info
            return handler
        }
        logger[metadataKey: "request"] = "1"
        logger[metadataKey: "request"] = "2"
        logger.info("first")
        logger[metadataKey: "app"] = "a"
        logger.info("second", metadata: ["request": "3"])
        logger.debug("below the level")

        let lines = captured.lines
        #expect(lines.count == 2)
        #expect(lines.first?.hasSuffix("info liveline: request=2 [LivelineCLITests] first") == true)
        #expect(lines.last?.hasSuffix("info liveline: app=a request=3 [LivelineCLITests] second") == true)
    }
}
