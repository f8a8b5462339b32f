import ActivityLifecycle
import ArgumentParser
import EventStore
import Foundation

extension Apps {
    /// `liveline apps apns …`: an app's APNs token credentials, as the admin API sets them.
    struct APNs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apns",
            abstract: "Set, show or remove an app's APNs credentials (the private key is never shown).",
            subcommands: [Set.self, Show.self, Remove.self]
        )

        struct Set: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Set or replace the app's APNs token credentials (needs LIVELINE_SECRET_KEY)."
            )

            @OptionGroup var app: AppArgument
            @OptionGroup var key: APNsKeyOptions
            @Option(help: "sandbox or production.")
            var environment: String
            @OptionGroup var options: ConfigurationOptions

            func validate() throws {
                guard APNsEnvironment(rawValue: environment) != nil else {
                    throw ValidationError("--environment must be sandbox or production")
                }
            }

            func run() async throws {
                let app = app.id
                try await reportingFailures {
                    let command = try CommandEnvironment.make(options)
                    let secretKey = try command.requireSecretKey()
                    let pem = try key.readKeyFile()
                    let credentials: APNsCredentials
                    do {
                        credentials = try APNsCredentials(
                            teamID: key.teamID,
                            keyID: key.keyID,
                            environment: APNsEnvironment(rawValue: environment)!,
                            privateKeyPEM: pem
                        )
                    } catch let error as InvalidAPNsCredentials {
                        throw ConfigurationError(
                            error.field == "privateKey" ? "\(key.keyFile) \(error.reason)" : "\(error)"
                        )
                    }
                    let summary = try await command.withStore { store in
                        try await store.setAPNsCredentials(
                            credentials,
                            for: app,
                            sealedWith: secretKey,
                            by: .commandLine
                        )
                    }
                    print(describe(summary))
                }
            }
        }

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show the app's APNs credentials, without the key."
            )

            @OptionGroup var app: AppArgument
            @OptionGroup var options: ConfigurationOptions

            func run() async throws {
                let app = app.id
                try await runningOnStore(options) { store in
                    guard let summary = try await store.apnsCredentialSummary(of: app) else {
                        guard try await store.app(app) != nil else { throw EventStoreError.unknownApp(app) }
                        throw ConfigurationError("app \(app) has no APNs credentials")
                    }
                    print(describe(summary))
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove the app's APNs credentials.")

            @OptionGroup var app: AppArgument
            @OptionGroup var options: ConfigurationOptions

            func run() async throws {
                let app = app.id
                try await runningOnStore(options) { store in
                    if try await store.removeAPNsCredentials(of: app, by: .commandLine) {
                        print("removed the APNs credentials of \(app)")
                    } else {
                        guard try await store.app(app) != nil else { throw EventStoreError.unknownApp(app) }
                        print("app \(app) had no APNs credentials")
                    }
                }
            }
        }
    }
}

private func describe(_ summary: APNsCredentialSummary) -> String {
    "\(summary.app)  team \(summary.teamID)  key \(summary.keyID)  \(summary.environment.rawValue)  "
        + "public key SHA-256 \(summary.publicKeySHA256)  updated \(summary.updatedAt)"
}
