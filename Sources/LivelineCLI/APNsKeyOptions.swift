import ArgumentParser
import Foundation

/// An APNs token key as the options name it: its team, its id and its `.p8` file.
struct APNsKeyOptions: ParsableArguments {
    @Option(name: .customLong("team-id"), help: "The 10-character team id of the Apple developer account.")
    var teamID: String
    @Option(name: .customLong("key-id"), help: "The 10-character id of the APNs key.")
    var keyID: String
    @Option(name: .customLong("key-file"), help: "The .p8 file Apple issued for the key.")
    var keyFile: String

    /// The key file's text (PEM).
    func readKeyFile() throws -> String {
        do {
            return try String(contentsOfFile: keyFile, encoding: .utf8)
        } catch {
            throw ConfigurationError("cannot read the key file \(keyFile)")
        }
    }
}
