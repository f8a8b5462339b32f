import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOPosix
import Testing

/// A server under test on the loopback interface.
enum Loopback {
    /// A port that nothing listens on now, below Linux's ephemeral range (32768 and up): a port
    /// of that range, once free, can become the source port of any outgoing connection of the
    /// suite before the server under test binds it.
    static func freePort() async throws -> Int {
        for _ in 0..<100 {
            let port = Int.random(in: 20_000..<32_000)
            guard
                let channel = try? await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .bind(host: "127.0.0.1", port: port).get()
            else { continue }
            try await channel.close()
            return port
        }
        throw LoopbackError.noFreePort
    }

    enum LoopbackError: Error {
        case noFreePort
    }

    /// A port something listens on (until the channel returned is closed).
    static func takenPort() async throws -> (any Channel, Int) {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        return (channel, try #require(channel.localAddress?.port))
    }

    /// Starts `liveline` with `arguments` on a free port (`LIVELINE_PORT`) and waits until it is
    /// ready. A port that something else binds between `freePort()` and the server's bind (another
    /// suite's server, say) is chosen again, up to five times.
    static func startServer(
        _ arguments: [String],
        database: String?,
        environment: [String: String?] = [:]
    ) async throws -> (server: LivelineProcess, port: Int) {
        for _ in 0..<5 {
            let port = try await freePort()
            let server = try LivelineProcess.start(
                arguments,
                database: database,
                environment: environment.merging(["LIVELINE_PORT": "\(port)"]) { $1 }
            )
            if try await waitUntilReady(server, port: port, retryingATakenPort: true) { return (server, port) }
        }
        throw LoopbackError.noFreePort
    }

    /// Waits until `server` answers `/readyz` on `port` with 200, for up to two minutes (a new
    /// cluster's initdb on a machine the whole suite loads takes most of one); a server
    /// that ends meanwhile (it could not bind, say) is a failure that shows what it printed —
    /// unless the port was taken and `retryingATakenPort`: then the answer is `false`.
    @discardableResult
    static func waitUntilReady(
        _ server: LivelineProcess,
        port: Int,
        retryingATakenPort: Bool = false
    ) async throws -> Bool {
        for _ in 0..<1_200 {
            let ready = try? await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                try await client.get("/readyz").status == .ok
            }
            if ready == true { return true }
            // Read whether or not the process is seen to have ended: Foundation was seen to leave
            // one that ended unreaped, running as far as it knew.
            if retryingATakenPort, server.errorsSoFar.contains("Address already in use") { return false }
            guard server.isRunning else {
                Issue.record("the server for port \(port) ended before it was ready:\n\(server.errorsSoFar)")
                return true
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the server on port \(port) was not ready within two minutes:\n\(server.errorsSoFar)")
        return true
    }
}
