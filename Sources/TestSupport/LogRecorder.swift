public import Logging
import Synchronization

/// Keeps every line logged through its `logger`, at every level, as text: the level, the
/// message and the metadata.
public final class LogRecorder: Sendable {
    private let recorded = Mutex<[String]>([])

    public init() {}

    /// What was logged so far, in order.
    public var lines: [String] { recorded.withLock { $0 } }

    public func logger(label: String) -> Logger {
        Logger(label: label) { _ in Handler(recorder: self) }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            recorder.recorded.withLock { $0.append("\(event.level) \(event.message) \(merged)") }
        }
    }
}
