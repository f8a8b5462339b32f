import Foundation
import LivelineCLI
import Logging
import Testing

@Suite("Configuration: flags, then environment, then defaults")
struct ConfigurationTests {
    @Test("with nothing set, every setting has its documented default")
    func defaults() throws {
        let configuration = try LivelineConfiguration(flags: [:], environment: [:])
        #expect(configuration.databaseURL == nil)
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.logLevel == .info)
        #expect(configuration.migrationsDirectory.relativePath == "migrations")
        #expect(configuration.poolSize == 10)
        #expect(configuration.writers == nil)
        #expect(configuration.adminKey == nil)
        #expect(configuration.activeLifetime == .seconds(8 * 3600))
        #expect(configuration.dismissalWindow == .seconds(4 * 3600))
        #expect(configuration.globalMaxOpen == nil)
        #expect(configuration.devDataDirectory.relativePath == ".liveline")
        #expect(configuration.retention == nil)
        #expect(configuration.archiveDirectory == nil)
        #expect(configuration.partitionInterval == nil)
    }

    @Test("retention is at least the longest an activity lives and a minute, however short lifetimes are set")
    func retention() throws {
        let week = try LivelineConfiguration(
            flags: [:],
            environment: ["LIVELINE_RETENTION": "7d", "LIVELINE_ARCHIVE_DIR": "/archives"]
        )
        #expect(week.retention == .seconds(7 * 86400))
        #expect(week.archiveDirectory == "/archives")
        let scaled = [
            "LIVELINE_ACTIVE_LIFETIME": "2m", "LIVELINE_DISMISSAL_WINDOW": "1m", "LIVELINE_PARTITION_INTERVAL": "1m",
        ]
        #expect(
            try LivelineConfiguration(flags: [:], environment: scaled.merging(["LIVELINE_RETENTION": "4m"]) { $1 })
                .retention == .seconds(240)
        )
        #expect(try LivelineConfiguration(flags: [:], environment: scaled).partitionInterval == .seconds(60))
        #expect {
            _ = try LivelineConfiguration(
                flags: [:],
                environment: scaled.merging(["LIVELINE_RETENTION": "3m59s"]) { $1 }
            )
        } throws: { error in
            (error as? ConfigurationError)?.description
                == "LIVELINE_RETENTION must be at least 4m, the longest an activity lives "
                + #"(LIVELINE_ACTIVE_LIFETIME + LIVELINE_DISMISSAL_WINDOW) and a minute, got "3m59s""#
        }
    }

    @Test("the environment sets each value; a flag wins over it; an empty variable counts as unset")
    func environmentAndFlags() throws {
        let environment = [
            "DATABASE_URL": "postgres://db/liveline",
            "LIVELINE_HOST": "0.0.0.0",
            "LIVELINE_PORT": "9000",
            "LIVELINE_LOG_LEVEL": "DEBUG",
            "LIVELINE_POOL_SIZE": "",
            "LIVELINE_ADMIN_KEY": "secret",
            "LIVELINE_ACTIVE_LIFETIME": "1h30m",
            "LIVELINE_DISMISSAL_WINDOW": "250ms",
            "LIVELINE_GLOBAL_MAX_OPEN": "0",
            "LIVELINE_WRITERS": "3",
        ]
        let configuration = try LivelineConfiguration(
            flags: ["liveline.port": "9001", "liveline.pool.size": "4"],
            environment: environment
        )
        #expect(configuration.databaseURL == "postgres://db/liveline")
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 9001)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.poolSize == 4)
        #expect(configuration.writers == 3)
        #expect(configuration.adminKey == "secret")
        #expect(configuration.activeLifetime == .seconds(90 * 60))
        #expect(configuration.dismissalWindow == .milliseconds(250))
        #expect(configuration.globalMaxOpen == 0)
        #expect(try LivelineConfiguration(flags: [:], environment: ["LIVELINE_POOL_SIZE": ""]).poolSize == 10)
    }

    @Test(
        "a value that cannot be used stops start-up with one line naming the variable, what it takes, and what it got",
        arguments: [
            ("LIVELINE_PORT", "0", #"LIVELINE_PORT must be a whole number from 1 to 65535, got "0""#),
            ("LIVELINE_PORT", "80a", #"LIVELINE_PORT must be a whole number from 1 to 65535, got "80a""#),
            ("LIVELINE_POOL_SIZE", "1001", #"LIVELINE_POOL_SIZE must be a whole number from 1 to 1000, got "1001""#),
            ("LIVELINE_WRITERS", "11", #"LIVELINE_WRITERS must be a whole number from 1 to 10, got "11""#),
            ("LIVELINE_WRITERS", "0", #"LIVELINE_WRITERS must be a whole number from 1 to 10, got "0""#),
            (
                "LIVELINE_GLOBAL_MAX_OPEN", "-1",
                #"LIVELINE_GLOBAL_MAX_OPEN must be a whole number from 0 to 2147483647, got "-1""#
            ),
            (
                "LIVELINE_LOG_LEVEL", "verbose",
                #"LIVELINE_LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical, got "verbose""#
            ),
            (
                "LIVELINE_ACTIVE_LIFETIME", "8",
                #"LIVELINE_ACTIVE_LIFETIME must be a positive duration such as 8h, 90m, 30s or 1h30m, got "8""#
            ),
            (
                "LIVELINE_RETENTION", "12h",
                "LIVELINE_RETENTION must be at least 12h1m, the longest an activity lives "
                    + #"(LIVELINE_ACTIVE_LIFETIME + LIVELINE_DISMISSAL_WINDOW) and a minute, got "12h""#
            ),
            (
                "LIVELINE_PARTITION_INTERVAL", "30s",
                #"LIVELINE_PARTITION_INTERVAL must be at least 1m, the shortest partition, got "30s""#
            ),
            (
                "LIVELINE_DISMISSAL_WINDOW", "0h",
                #"LIVELINE_DISMISSAL_WINDOW must be a positive duration such as 8h, 90m, 30s or 1h30m, got "0h""#
            ),
        ]
    )
    func refusals(variable: String, value: String, message: String) {
        #expect {
            _ = try LivelineConfiguration(flags: [:], environment: [variable: value])
        } throws: { error in
            (error as? ConfigurationError)?.description == message
        }
    }

    @Test(
        "durations are number-unit pairs in d, h, m, s and ms, summed, and are written back so",
        arguments: [
            ("7d", 7 * 86_400_000), ("1d12h", 36 * 3_600_000), ("12h1m", 43_260_000), ("8h", 8 * 3_600_000),
            ("90m", 90 * 60_000), ("30s", 30_000), ("250ms", 250), ("1h30m", 5_400_000), ("1m1s1ms", 61_001),
            ("08h", 8 * 3_600_000), ("0s", 0),
        ] as [(String, Int64)]
    )
    func durations(text: String, milliseconds: Int64) {
        let duration = Duration.milliseconds(milliseconds)
        #expect(Duration(humanReadable: text) == duration)
        #expect(Duration(humanReadable: duration.humanReadable) == duration)
    }

    @Test(
        "anything else is not a duration",
        arguments: ["", "8", "h", "8x", "-1h", "1h30", "1.5h", " 8h", "8h ", "8H", "١h", "9223372036854775807h"]
    )
    func notDurations(text: String) {
        #expect(Duration(humanReadable: text) == nil)
    }
}
