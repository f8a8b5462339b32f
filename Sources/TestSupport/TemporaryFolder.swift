import Foundation

/// A short-named folder under /tmp (Unix socket paths must stay short).
enum TemporaryFolder {
    static func make() throws -> URL {
        let folder = URL(filePath: "/tmp/liveline-test-\(getpid())-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // The cluster may run as the `postgres` user (when tests run as root): let it reach in.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        return folder
    }
}

extension URL {
    func remove() {
        try? FileManager.default.removeItem(at: self)
    }
}
