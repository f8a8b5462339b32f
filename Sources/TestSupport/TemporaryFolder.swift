import EmbeddedPostgres
import Foundation

/// A short-named folder under /tmp (Unix socket paths must stay short).
enum TemporaryFolder {
    private static let prefix = "liveline-test-"

    static func make() throws -> URL {
        let folder = URL(filePath: "/tmp/\(prefix)\(getpid())-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // The cluster may run as the `postgres` user (when tests run as root): let it reach in.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        return folder
    }

    /// Stops and deletes the clusters of test processes that died without cleaning up (a crash,
    /// a kill): their folders are named after their process id.
    static func removeAbandoned() {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for entry in entries where entry.hasPrefix(prefix) {
            guard let pid = Int32(entry.dropFirst(prefix.count).prefix { $0.isNumber }), pid != getpid(),
                kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            let folder = URL(filePath: "/tmp/\(entry)")
            try? EmbeddedPostgres.stopServer(dataDirectory: folder.appending(path: "data"))
            folder.remove()
        }
    }
}

extension URL {
    func remove() {
        try? FileManager.default.removeItem(at: self)
    }
}
