import ActivityLifecycle
import Configuration
import Delivery
package import EventStore
package import Foundation
package import Logging

/// Liveline's settings, read once at start-up: flags, then environment, then defaults.
///
/// Keys map to environment variables by upper-casing and replacing dots with underscores
/// (`liveline.port` ↔ `LIVELINE_PORT`, `database.url` ↔ `DATABASE_URL`). Every value is checked
/// here, so a bad one stops the program with one clear line before anything starts.
package struct LivelineConfiguration: Sendable {
    package var databaseURL: String?
    package var host: String
    package var port: Int
    package var logLevel: Logger.Level
    package var migrationsDirectory: URL
    package var poolSize: Int
    /// How many of the pool's connections run batches of commands at once; `nil`: the store's
    /// default (a quarter of the pool).
    package var writers: Int?
    /// The admin API's bearer key; the admin API is closed when unset.
    package var adminKey: String?
    /// What APNs private keys are sealed under at rest; without it none can be stored.
    package var secretKey: SecretKey?
    /// How long an activity may stay active or stale (platform: 8 h).
    package var activeLifetime: Duration
    /// How long an ended activity stays on screen at most (platform: 4 h).
    package var dismissalWindow: Duration
    /// How long a device has, after APNs accepted a remote start, to report the new activity's
    /// push token before the start is recorded unconfirmed.
    package var startConfirmationWindow: Duration
    /// Unconfirmed starts in a row to one push-to-start token that make it suspect.
    package var suspectTokenAfter: Int
    /// How long an idempotency key is kept: a retry after it is a new command.
    package var idempotencyWindow: Duration
    /// How long the log keeps a partition after it settled; `nil` keeps everything.
    package var retention: Duration?
    /// Where retired partitions are archived before they are dropped.
    package var archiveDirectory: String?
    /// The length of the log's partitions, applied to the database at start-up when set.
    package var partitionInterval: Duration?
    /// The service-wide cap on open activities, applied to the database at start-up when set.
    package var globalMaxOpen: Int?
    /// Where `liveline dev` keeps its private PostgreSQL cluster (and its secret key).
    package var devDataDirectory: URL
    /// Whether the server delivers pushes to APNs (it needs `secretKey` to open apps' keys).
    package var delivery: Bool
    /// Where production and sandbox pushes go: Apple's hosts, or a local APNs.
    package var apnsProductionURL: String
    package var apnsSandboxURL: String
    /// Where broadcasts on channels go, production and sandbox.
    package var apnsBroadcastProductionURL: String
    package var apnsBroadcastSandboxURL: String
    /// Where channels are managed, production and sandbox.
    package var apnsChannelsProductionURL: String
    package var apnsChannelsSandboxURL: String
    /// A PEM certificate to trust besides the system's roots (a local APNs').
    package var apnsTrustedCertificateFile: URL?
    /// The deadline of every request to APNs.
    package var apnsTimeout: Duration
    /// How many requests to APNs may be in flight at once.
    package var deliveryInFlight: Int
    /// How long a support console session lasts from sign-in.
    package var consoleSessionLifetime: Duration
    /// A trace viewer's address for a trace, `{traceId}` standing for its id: the console links
    /// events to their traces with it.
    package var consoleTraceURL: String?

    /// What the shortest retention adds to the longest an activity can live.
    static let retentionMargin = Duration.seconds(60)

    package init(flags: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let reader = ConfigReader(providers: [
            InMemoryProvider(
                name: "flags",
                values: Dictionary(
                    uniqueKeysWithValues: flags.map {
                        (AbsoluteConfigKey(stringLiteral: $0.key), ConfigValue(.string($0.value), isSecret: false))
                    }
                )
            ),
            EnvironmentVariablesProvider(
                environmentVariables: environment,
                secretsSpecifier: .specific(["DATABASE_URL", "LIVELINE_ADMIN_KEY", "LIVELINE_SECRET_KEY"])
            ),
        ])
        func setting(_ key: String) -> Setting {
            Setting(
                name: key.uppercased().replacingOccurrences(of: ".", with: "_"),
                value: reader.string(
                    forKey: ConfigKey(key),
                    isSecret: ["database.url", "liveline.admin.key", "liveline.secret.key"].contains(key)
                )
                .flatMap { $0.isEmpty ? nil : $0 }
            )
        }
        databaseURL = setting("database.url").value
        host = setting("liveline.host").value ?? "127.0.0.1"
        port = try setting("liveline.port").integer(default: 8080, in: 1...65535)
        logLevel = try setting("liveline.log.level").logLevel(default: .info)
        migrationsDirectory = URL(filePath: setting("liveline.migrations").value ?? "migrations")
        poolSize = try setting("liveline.pool.size").integer(default: 10, in: 1...1000)
        let writers = setting("liveline.writers")
        self.writers = writers.value == nil ? nil : try writers.integer(default: 1, in: 1...poolSize)
        adminKey = setting("liveline.admin.key").value
        secretKey = try setting("liveline.secret.key").value.map { text in
            guard let key = try? SecretKey(text) else { throw ConfigurationError(InvalidSecretKey().description) }
            return key
        }
        activeLifetime = try setting("liveline.active.lifetime").duration(default: .seconds(8 * 3600))
        dismissalWindow = try setting("liveline.dismissal.window").duration(default: .seconds(4 * 3600))
        startConfirmationWindow = try setting("liveline.start.confirmation.window").duration(
            default: LifecyclePolicy.standard.startConfirmationWindow
        )
        suspectTokenAfter = try setting("liveline.suspect.token.after").integer(
            default: LifecyclePolicy.standard.suspectAfterUnconfirmedStarts,
            in: 1...1000
        )
        idempotencyWindow = try setting("liveline.idempotency.window").duration(default: .seconds(24 * 3600))
        retention = try setting("liveline.retention").duration(
            atLeast: activeLifetime + dismissalWindow + Self.retentionMargin,
            because: "the longest an activity lives (LIVELINE_ACTIVE_LIFETIME + LIVELINE_DISMISSAL_WINDOW) and a minute"
        )
        archiveDirectory = setting("liveline.archive.dir").value
        partitionInterval = try setting("liveline.partition.interval").duration(
            atLeast: .seconds(60),
            because: "the shortest partition"
        )
        let globalMaxOpen = setting("liveline.global.max.open")
        self.globalMaxOpen =
            globalMaxOpen.value == nil ? nil : try globalMaxOpen.integer(default: 0, in: 0...Int(Int32.max))
        devDataDirectory = URL(filePath: setting("liveline.dev.data").value ?? ".liveline")
        delivery = try setting("liveline.delivery").switch(default: true)
        apnsProductionURL = try setting("liveline.apns.production.url").httpsURL(
            default: APNsConfiguration.appleProductionURL
        )
        apnsSandboxURL = try setting("liveline.apns.sandbox.url").httpsURL(default: APNsConfiguration.appleSandboxURL)
        apnsBroadcastProductionURL = try setting("liveline.apns.broadcast.production.url").httpsURL(
            default: APNsConfiguration.appleBroadcastProductionURL
        )
        apnsBroadcastSandboxURL = try setting("liveline.apns.broadcast.sandbox.url").httpsURL(
            default: APNsConfiguration.appleBroadcastSandboxURL
        )
        apnsChannelsProductionURL = try setting("liveline.apns.channels.production.url").httpsURL(
            default: APNsConfiguration.appleChannelsProductionURL
        )
        apnsChannelsSandboxURL = try setting("liveline.apns.channels.sandbox.url").httpsURL(
            default: APNsConfiguration.appleChannelsSandboxURL
        )
        apnsTrustedCertificateFile = setting("liveline.apns.ca.file").value.map { URL(filePath: $0) }
        apnsTimeout = try setting("liveline.apns.timeout").duration(default: .seconds(10))
        deliveryInFlight = try setting("liveline.delivery.in.flight").integer(default: 256, in: 1...10_000)
        consoleSessionLifetime = try setting("liveline.console.session.lifetime").duration(default: .seconds(8 * 3600))
        consoleTraceURL = try setting("liveline.console.trace.url").traceURLTemplate()
    }
}

/// One raw setting and the checks that turn it into a typed value.
struct Setting {
    let name: String
    let value: String?

    func integer(default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let value else { return fallback }
        guard let number = Int(value), range.contains(number) else {
            throw ConfigurationError(
                "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(value)\""
            )
        }
        return number
    }

    /// An http(s) address holding `{traceId}`; `nil` when unset.
    func traceURLTemplate() throws -> String? {
        guard let value else { return nil }
        guard value.hasPrefix("http://") || value.hasPrefix("https://"), value.contains("{traceId}") else {
            throw ConfigurationError(
                "\(name) must be an http:// or https:// address holding {traceId}, such as "
                    + "http://localhost:16686/trace/{traceId}, got \"\(value)\""
            )
        }
        return value
    }

    func logLevel(default fallback: Logger.Level) throws -> Logger.Level {
        guard let value else { return fallback }
        guard let level = Logger.Level(rawValue: value.lowercased()) else {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError("\(name) must be one of \(levels), got \"\(value)\"")
        }
        return level
    }

    func `switch`(default fallback: Bool) throws -> Bool {
        guard let value else { return fallback }
        switch value.lowercased() {
        case "on", "true", "1", "yes": return true
        case "off", "false", "0", "no": return false
        default: throw ConfigurationError("\(name) must be on or off, got \"\(value)\"")
        }
    }

    func httpsURL(default fallback: String) throws -> String {
        guard let value else { return fallback }
        guard APNsConfiguration.isBaseURL(value) else {
            throw ConfigurationError(
                "\(name) must be https://host or https://host:port, such as https://api.push.apple.com, got \"\(value)\""
            )
        }
        return value
    }

    /// An optional duration of at least `minimum`; `nil` when unset.
    func duration(atLeast minimum: Duration, because reason: String) throws -> Duration? {
        guard value != nil else { return nil }
        let duration = try duration(default: minimum)
        guard duration >= minimum else {
            throw ConfigurationError(
                "\(name) must be at least \(minimum.humanReadable), \(reason), got \"\(value ?? "")\""
            )
        }
        return duration
    }

    func duration(default fallback: Duration) throws -> Duration {
        guard let value else { return fallback }
        guard let duration = Duration(humanReadable: value), duration > .zero else {
            throw ConfigurationError(
                "\(name) must be a positive duration such as 8h, 90m, 30s or 1h30m, got \"\(value)\""
            )
        }
        return duration
    }
}

/// A configuration value that cannot be used, described in one line.
package struct ConfigurationError: Error, CustomStringConvertible {
    package let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension Duration {
    /// The units of durations as written, longest first.
    private static let units: [(suffix: String, milliseconds: Int64)] = [
        ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1),
    ]

    /// Parses durations written as a sequence of number-unit pairs: `7d`, `8h`, `90m`, `1h30m`,
    /// `2s`, `250ms`.
    package init?(humanReadable text: String) {
        // `ms` before `m` and `s`, which it begins with or ends with.
        let units = Self.units.sorted { $0.suffix.count > $1.suffix.count }
        var rest = Substring(text)
        var total: Int64 = 0
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let digits = rest.prefix(while: \.isASCIIDigitCharacter)
            rest = rest.dropFirst(digits.count)
            guard let number = Int64(digits),
                let unit = units.first(where: { rest.hasPrefix($0.suffix) })
            else { return nil }
            rest = rest.dropFirst(unit.suffix.count)
            let (product, overflow) = number.multipliedReportingOverflow(by: unit.milliseconds)
            guard !overflow, total <= Int64.max - product else { return nil }
            total += product
        }
        self = .milliseconds(total)
    }

    /// The duration as it is written in settings (`12h1m`, `90s`), to the millisecond.
    package var humanReadable: String {
        var rest = components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000
        guard rest > 0 else { return "0s" }
        var text = ""
        for unit in Self.units where rest >= unit.milliseconds {
            text += "\(rest / unit.milliseconds)\(unit.suffix)"
            rest %= unit.milliseconds
        }
        return text
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}
