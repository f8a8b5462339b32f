public import ArgumentParser

/// The `liveline` command: the server and the tools around it.
public struct Liveline: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "liveline",
        abstract: "Live Activity lifecycle server.",
        subcommands: [
            Serve.self, Dev.self, Migrate.self, Apps.self, Audit.self, Verify.self, Replay.self, Archive.self,
            Erase.self,
            LifecycleTable.self,
            LocalAPNsCommand.self,
        ]
    )

    public init() {}
}
