public import EventStore
import Foundation
public import Hummingbird
public import LogArchive
public import Logging

/// The support console: server-rendered, read-only pages over the log under `/console`, for
/// people answering "my Live Activity didn't update". Sign-in takes the admin key (every app) or
/// an app's key (that app only) and turns it into a session (`ConsoleSessionCookie`); content is
/// masked until an admin reveals it, which the audit trail records.
public struct SupportConsole: Sendable {
    public struct Configuration: Sendable {
        /// How long a session lasts from sign-in.
        public var sessionLifetime: Duration
        /// A trace viewer's address for a trace, `{traceId}` standing for its id (Jaeger:
        /// `http://localhost:16686/trace/{traceId}`); `nil` shows trace ids without links.
        public var traceURLTemplate: String?
        /// Where retired activities' events are read from, as `liveline audit` does.
        public var archiveFolder: ArchiveFolder?
        /// How long the log keeps settled partitions, shown on an app's health page.
        public var retention: Duration?

        public init(
            sessionLifetime: Duration = .seconds(8 * 3600),
            traceURLTemplate: String? = nil,
            archiveFolder: ArchiveFolder? = nil,
            retention: Duration? = nil
        ) {
            self.sessionLifetime = sessionLifetime
            self.traceURLTemplate = traceURLTemplate
            self.archiveFolder = archiveFolder
            self.retention = retention
        }
    }

    let store: EventStore
    let adminKey: AdminKey?
    let configuration: Configuration
    let pages: ConsolePages
    let logger: Logger

    /// - Parameter adminKey: the admin key; `nil` signs in app keys only.
    public init(store: EventStore, adminKey: String?, configuration: Configuration, logger: Logger) throws {
        self.store = store
        self.adminKey = adminKey.map(AdminKey.init)
        self.configuration = configuration
        self.pages = try ConsolePages.load()
        self.logger = logger
    }

    /// Adds the console's routes under `/console`.
    public func register<Context: RequestContext>(on router: Router<Context>) {
        ConsoleRoutes<Context>(console: self).register(on: router)
    }
}
