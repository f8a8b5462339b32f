import Foundation

/// The PostgreSQL server programs, and how to run them as a user PostgreSQL accepts.
struct PostgresBinaries: Sendable {
    enum Program: String {
        case initdb
        case pgCtl = "pg_ctl"
        case pgDump = "pg_dump"
    }

    let directory: URL
    /// The account the server runs as when this process is root (PostgreSQL refuses root).
    let runAs: (name: String, uid: uid_t, gid: gid_t)?

    /// Finds `initdb` and `pg_ctl` (and `pg_dump` beside them): `LIVELINE_PG_BINDIR`, then `PATH`,
    /// then Debian's `/usr/lib/postgresql/<version>/bin` (newest version first).
    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PostgresBinaries {
        var candidates: [URL] = []
        if let explicit = environment["LIVELINE_PG_BINDIR"], !explicit.isEmpty {
            candidates.append(URL(filePath: explicit))
        }
        candidates += (environment["PATH"] ?? "").split(separator: ":").map { URL(filePath: String($0)) }
        let debian = URL(filePath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: debian.path)) ?? []
        candidates += versions.sorted { $0.compare($1, options: .numeric) == .orderedDescending }
            .map { debian.appending(path: $0).appending(path: "bin") }

        guard
            let directory = candidates.first(where: { directory in
                [Program.initdb, .pgCtl].allSatisfy {
                    FileManager.default.isExecutableFile(atPath: directory.appending(path: $0.rawValue).path)
                }
            })
        else {
            throw EmbeddedPostgresError(
                "PostgreSQL server programs (initdb, pg_ctl) not found: install the `postgresql` package "
                    + "(scripts/install-dependencies.sh does), set LIVELINE_PG_BINDIR, or set DATABASE_URL"
            )
        }
        // Where the programs really are (PATH may hold links to some of them): `pg_dump` is there too.
        let installed = directory.appending(path: Program.initdb.rawValue).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        return PostgresBinaries(directory: installed, runAs: try unprivilegedAccountIfRoot())
    }

    private static func unprivilegedAccountIfRoot() throws -> (name: String, uid: uid_t, gid: gid_t)? {
        guard geteuid() == 0 else { return nil }
        guard let entry = getpwnam("postgres") else {
            throw EmbeddedPostgresError(
                "running as root, but PostgreSQL refuses to run as root and there is no `postgres` user to run it as "
                    + "(installing the `postgresql` package creates one)"
            )
        }
        return ("postgres", entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// Whether the server's account can reach `folder`: every existing directory on the way must
    /// be searchable by it. Always true when the server runs as this process's own user.
    func serverCanReach(_ folder: URL) -> Bool {
        guard let runAs else { return true }
        var path = URL(filePath: "/")
        for component in folder.standardizedFileURL.pathComponents.dropFirst() {
            var info = stat()
            guard stat(path.path, &info) == 0 else { return true }  // the rest is created for the server
            let searchable =
                info.st_mode & S_IXOTH != 0
                || (info.st_uid == runAs.uid && info.st_mode & S_IXUSR != 0)
                || (info.st_gid == runAs.gid && info.st_mode & S_IXGRP != 0)
            guard searchable else { return false }
            path = path.appending(path: component)
        }
        return true
    }

    /// Makes `directory` belong to the account the server runs as.
    func handOver(_ directory: URL) throws {
        guard let runAs else { return }
        guard chown(directory.path, runAs.uid, runAs.gid) == 0 else {
            throw EmbeddedPostgresError(
                "cannot give \(directory.path) to user \(runAs.name): \(String(cString: strerror(errno)))"
            )
        }
    }

    /// Runs a program to completion; a non-accepted exit code is an error quoting its output.
    /// - Returns: the exit code.
    @discardableResult
    func run(_ program: Program, _ arguments: [String], acceptingExitCodes: Set<Int32> = [0]) throws -> Int32 {
        try output(program, arguments, acceptingExitCodes: acceptingExitCodes).status
    }

    /// Runs a program to completion, as `run` does; returns what it printed too. Only the
    /// server's programs run as the server's account; a client (`pg_dump`) runs as this process,
    /// so that it can work in this process's directory.
    func output(
        _ program: Program,
        _ arguments: [String],
        acceptingExitCodes: Set<Int32> = [0]
    ) throws -> (status: Int32, output: String) {
        let executable = directory.appending(path: program.rawValue).path
        let runAs = program == .pgDump ? nil : runAs
        let command = runAs.map { ["/usr/sbin/runuser", "-u", $0.name, "--", executable] } ?? [executable]
        let (status, output) = try ChildProcess.run(command + arguments)
        guard acceptingExitCodes.contains(status) else {
            throw EmbeddedPostgresError(
                "\(program.rawValue) \(arguments.first ?? "") failed (exit \(status)): "
                    + output.trimmingCharacters(in: .whitespacesAndNewlines)
            )
        }
        return (status, output)
    }
}
