import Foundation

/// Runs a program and waits for it, with `posix_spawn` and `waitpid`.
///
/// Not Foundation's `Process`: it learns that a child ended when every holder of a descriptor
/// it passed down has closed it, and the server that `pg_ctl start` leaves running inherits
/// that descriptor, so `waitUntilExit()` would never return. Here the child gets standard input
/// from `/dev/null` and its output in a file; the process's other descriptors (NIO's, libpq's)
/// are all close-on-exec. It also starts with no signal blocked and default signal handling:
/// the threads of a server block most signals, and a child that inherited that mask would never
/// see its own timers (pgbench's `-T` waits for a SIGALRM).
public enum ChildProcess {
    /// - Returns: the exit status (or 128 + signal) and everything the program printed.
    public static func run(_ command: [String]) throws -> (status: Int32, output: String) {
        let outputURL = FileManager.default.temporaryDirectory.appending(path: "liveline-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: outputURL) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let arguments = command.map { strdup($0) } + [nil]
        defer {
            for argument in arguments { free(argument) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, command[0], &actions, &attributes, arguments, environ)
        guard spawned == 0 else {
            throw EmbeddedPostgresError("cannot run \(command[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else {
                throw EmbeddedPostgresError("cannot wait for \(command[0]): \(String(cString: strerror(errno)))")
            }
        }
        let output = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift cannot import.
        let exitStatus = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exitStatus, output)
    }
}
