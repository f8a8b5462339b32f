package import Logging

/// Writes log messages to standard error as swift-log's `StreamLogHandler` does, but formats the
/// logger's metadata only when a message is written. `StreamLogHandler` formats it whenever it
/// changes, and Hummingbird gives every request's logger a request id: that cost a few percent
/// of the server's CPU under load, for messages that the log level then dropped.
package struct StandardErrorLogHandler: LogHandler {
    private var output: StreamLogHandler
    package var metadata: Logger.Metadata = [:]

    init(label: String, logLevel: Logger.Level) {
        self.init(output: .standardError(label: label))
        self.logLevel = logLevel
    }

    /// A handler writing through `output` (tests give it a stream of their own).
    package init(output: StreamLogHandler) {
        self.output = output
    }

    package var logLevel: Logger.Level {
        get { output.logLevel }
        set { output.logLevel = newValue }
    }

    package var metadataProvider: Logger.MetadataProvider? {
        get { output.metadataProvider }
        set { output.metadataProvider = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var output = output
        output.metadata = metadata
        output.log(event: event)
    }
}
