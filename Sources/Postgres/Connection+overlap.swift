import Dispatch

extension Connection {
    /// Runs `statements` on this connection, on this thread, while `work` runs on another: for
    /// a client with work of its own between statements, such as folding one batch of a cursor
    /// while the server reads the next and the rows of the batch before are sent with COPY.
    /// The rows of a query are received as the server sends them, so the server does not stall
    /// on a full socket while the client works.
    ///
    /// `work` must not use this connection. Both always finish before this returns; when
    /// either throws, that error is thrown (the statements' first).
    public func run<Result, Work>(
        _ statements: (Connection) throws -> Result,
        while work: () throws -> Work
    ) throws -> (Result, Work) {
        try withoutActuallyEscaping(work) { work in
            // Both are touched by the other thread only before `finished` is signalled; `work`
            // is let go of there first, as `withoutActuallyEscaping` requires.
            nonisolated(unsafe) var pending = Optional(work)
            nonisolated(unsafe) var done: Swift.Result<Work, any Error>?
            let finished = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                done = Swift.Result { try pending!() }
                pending = nil
                finished.signal()
            }
            let result = Swift.Result { try statements(self) }
            finished.wait()
            return (try result.get(), try done!.get())
        }
    }
}
