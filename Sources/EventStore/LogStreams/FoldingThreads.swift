import NIOCore
import NIOPosix

/// The threads a read of the log folds on, beside the connection's thread that runs its
/// statements: two of NIO's thread pool, the tools' one way of doing work at once. A fold that
/// runs on one of them may split its work with the other, so there are exactly two.
///
/// Work is handed over by value (`Sendable`), and each `run` waits for what it started, so
/// nothing outlives the read that started it.
package struct FoldingThreads: Sendable {
    private let pool = NIOThreadPool(numberOfThreads: 2)
    private let eventLoop = MultiThreadedEventLoopGroup.singleton.any()

    package init() {
        pool.start()
    }

    /// Runs `work` on the calling thread while `meanwhile` runs on one of the threads; returns
    /// when both are done. When either throws, that error is thrown (`work`'s first).
    package func run<Result, Other: Sendable>(
        _ work: () throws -> Result,
        meanwhile: @escaping @Sendable () throws -> Other
    ) throws -> (Result, Other) {
        let other = pool.runIfActive(eventLoop: eventLoop, meanwhile)
        let result = Swift.Result { try work() }
        let otherResult = Swift.Result { try other.wait() }
        return (try result.get(), try otherResult.get())
    }

    package func shutDown() {
        try? pool.syncShutdownGracefully()
    }
}
