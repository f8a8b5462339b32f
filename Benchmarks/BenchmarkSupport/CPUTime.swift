public import EmbeddedPostgres
import Foundation

/// CPU time used so far (user + system, in seconds), read from /proc: this process's, and a
/// PostgreSQL cluster's — its postmaster, the postmaster's running children (backends, background
/// workers) and the children it has reaped (the backends of clients that disconnected, such as
/// pgbench's).
public struct CPUTime: Sendable {
    public let process: Double
    public let postgres: Double

    public static func now(of cluster: EmbeddedPostgres) -> CPUTime {
        let postmaster =
            (try? String(
                contentsOf: cluster.configuration.dataDirectory.appending(path: "postmaster.pid"),
                encoding: .utf8
            ))
            .flatMap { $0.split(separator: "\n").first.flatMap { Int32($0) } }
        var postgres = 0.0
        if let postmaster {
            postgres = ProcStat(pid: postmaster).map { $0.own + $0.reaped } ?? 0
            let children = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            for pid in children.compactMap({ Int32($0) }) {
                if let stat = ProcStat(pid: pid), stat.parent == postmaster { postgres += stat.own }
            }
        }
        return CPUTime(process: ProcStat(pid: getpid())?.own ?? 0, postgres: postgres)
    }

    /// The CPU used between `earlier` and `self`, in microseconds per one of `count` operations.
    public func microseconds(since earlier: CPUTime, per count: Double) -> (process: Double, postgres: Double) {
        ((process - earlier.process) * 1e6 / count, (postgres - earlier.postgres) * 1e6 / count)
    }
}

/// The fields of /proc/PID/stat that `CPUTime` needs.
private struct ProcStat {
    let parent: Int32
    /// The process's own CPU time, and that of the children it has reaped, in seconds.
    let own: Double
    let reaped: Double

    init?(pid: Int32) {
        // The command name (field 2) may hold spaces and parentheses: the fields that follow
        // begin after its last `)`.
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // From field 3 (state): ppid is field 4; utime, stime, cutime, cstime are 14 to 17.
        guard fields.count > 14, let parent = Int32(fields[1]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let times = fields[11...14].map { (Double($0) ?? 0) / ticks }
        self.parent = parent
        self.own = times[0] + times[1]
        self.reaped = times[2] + times[3]
    }
}
