import PropertyBased
import PropertyChecks
import Testing

@testable import EventStore

@Suite("A paced job works its share of the time")
struct WorkPacerTests {
    /// A job's clock that moves only as the job works and rests.
    final class JobClock: @unchecked Sendable {
        let start = ContinuousClock.now
        var elapsed: Duration = .zero
        var rests: [Duration] = []

        func now() -> ContinuousClock.Instant { start + elapsed }

        func sleep(_ duration: Duration) {
            rests.append(duration)
            elapsed += duration
        }
    }

    /// Pieces of work of 0 to 50 ms, in microseconds.
    static let pieces = Gen.int(in: 0...50_000).array(of: 1...200)
    static let shares = Gen.int(in: 1...4)

    @Test("work is the share of the time worked and rested, within a quantum; no rest is longer than the longest")
    func share() async {
        await checkProperty(count: 1_000, input: Self.shares, Self.pieces) { quarters, pieces in
            let share = Double(quarters) / 4
            let clock = JobClock()
            let pacer = WorkPacer(share: share, longestRest: .seconds(1), now: clock.now, sleep: clock.sleep)
            var worked: Duration = .zero
            for piece in pieces {
                clock.elapsed += .microseconds(piece)
                worked += .microseconds(piece)
                try? pacer.pause()
            }
            let rested = clock.rests.reduce(Duration.zero, +)
            #expect(clock.rests.allSatisfy { $0 <= .seconds(1) })
            if share == 1 {
                #expect(clock.rests.isEmpty)
            } else if clock.rests.allSatisfy({ $0 < .seconds(1) }) {
                // Unrested work is less than a quantum, or the last piece (up to 50 ms) before the end.
                let owed = worked * ((1 - share) / share)
                #expect(rested <= owed + .microseconds(1))
                #expect(rested >= owed - (.milliseconds(60)) * ((1 - share) / share))
            }
        }
    }

    @Test("a job slower than a quantum rests after each piece, and work shorter than a quantum waits for more")
    func quantum() throws {
        let clock = JobClock()
        let pacer = WorkPacer(share: 0.25, quantum: .milliseconds(10), now: clock.now, sleep: clock.sleep)
        clock.elapsed += .milliseconds(4)
        try pacer.pause()
        #expect(clock.rests.isEmpty)
        clock.elapsed += .milliseconds(8)
        try pacer.pause()
        #expect(clock.rests == [.milliseconds(36)])
        clock.elapsed += .seconds(2)
        try pacer.pause()
        #expect(clock.rests == [.milliseconds(36), .seconds(1)])
    }

    @Test("a change runs alone: a quiet rest before and after it, or the rest owed if longer; none at a share of 1")
    func alone() throws {
        let clock = JobClock()
        let pacer = WorkPacer(share: 0.25, quiet: .milliseconds(250), now: clock.now, sleep: clock.sleep)
        clock.elapsed += .milliseconds(4)
        try pacer.alone { clock.elapsed += .milliseconds(20) }
        #expect(clock.rests == [.milliseconds(250), .milliseconds(250)])
        clock.elapsed += .milliseconds(400)
        let answer = try pacer.alone {
            clock.elapsed += .milliseconds(100)
            return 42
        }
        #expect(answer == 42)
        #expect(clock.rests.suffix(2) == [.seconds(1), .milliseconds(300)])

        let unpaced = JobClock()
        let unpacedPacer = WorkPacer(share: 1, now: unpaced.now, sleep: unpaced.sleep)
        try unpacedPacer.alone { unpaced.elapsed += .milliseconds(20) }
        #expect(unpaced.rests.isEmpty)
    }

    @Test("a stopped job does not begin a change")
    func stoppedBeforeAChange() {
        var ran = false
        let pacer = WorkPacer(share: 0.25, isStopped: { true }, sleep: { _ in })
        #expect(throws: CancellationError.self) { try pacer.alone { ran = true } }
        #expect(!ran)
    }

    @Test("a stopped job stops at its next pause")
    func stop() {
        var stopped = false
        let pacer = WorkPacer(share: 1, isStopped: { stopped })
        #expect(throws: Never.self) { try pacer.pause() }
        stopped = true
        #expect(throws: CancellationError.self) { try pacer.pause() }
    }
}
