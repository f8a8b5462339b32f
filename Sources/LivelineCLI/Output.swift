import Foundation

/// Progress on standard error: on a terminal, a bar with the count, the rate and the time left,
/// redrawn in place at most ten times a second; otherwise a plain line at every tenth of the way
/// (or every 100,000 items when the total is unknown), so logs stay readable.
final class Progress: @unchecked Sendable {
    private let label: String
    private let total: Int?
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private let started = ContinuousClock.now
    // Touched only by the one thread doing the work, one call at a time.
    private var lastDrawn = ContinuousClock.now - .seconds(1)
    private var lastStep = 0

    init(label: String, total: Int? = nil) {
        self.label = label
        self.total = total
    }

    /// Reports `count` items done (of `total`, when the work only knows it once started).
    func report(_ count: Int, of total: Int? = nil) {
        let total = total ?? self.total
        if isTerminal {
            let now = ContinuousClock.now
            guard now - lastDrawn >= .milliseconds(100) || count == total else { return }
            lastDrawn = now
            FileHandle.standardError.write(Data("\r\(line(count, total))\u{1B}[K".utf8))
        } else {
            let step = total.map { $0 > 0 ? count * 10 / $0 : 10 } ?? count / 100_000
            guard step > lastStep else { return }
            lastStep = step
            FileHandle.standardError.write(Data("\(line(count, total))\n".utf8))
        }
    }

    func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    private func line(_ count: Int, _ total: Int?) -> String {
        let seconds = max((ContinuousClock.now - started) / .seconds(1), 0.001)
        let rate = Double(count) / seconds
        let done = "\(count) \(label), \(Int(rate))/s"
        guard let total, total > 0 else { return done }
        let fraction = min(Double(count) / Double(total), 1)
        let width = 24
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let left = rate > 0 ? Int((Double(total - count) / rate).rounded(.up)) : 0
        return "[\(bar)] \(Int(fraction * 100))% \(count)/\(total) \(label), "
            + "\(Int(rate))/s, ETA \(left)s"
    }
}

/// A count with its noun, singular for one: `1 event`, `2 events`.
func counted(_ count: Int, _ singular: String, _ plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}
