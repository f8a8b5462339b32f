import CanonicalJSON
import HTTP2Window
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// One long-lived HTTP/2 connection to APNs over TLS. Each push is a stream of its own: a
/// HEADERS frame, then a DATA frame that ends it, written straight onto the connection (no
/// channel per stream). Requests are handed over in batches: one hop onto the connection's event
/// loop and one flush for all of them. APNs' answer ends the stream; a deadline, a reset, a
/// GOAWAY or the connection's end answers for it otherwise.
final class APNsConnection: Sendable {
    private let channel: any Channel
    private let usable: NIOLockedValueBox<Bool>

    private init(channel: any Channel, usable: NIOLockedValueBox<Bool>) {
        self.channel = channel
        self.usable = usable
    }

    /// The HTTP/2 settings of every connection. A push whose deadline passed is reset, and
    /// APNs' late answer to it must be ignored rather than taken for a protocol error that closes
    /// the connection: NIO remembers 32 reset streams by default, far fewer than can be in flight.
    ///
    /// Header blocks are not validated: what is sent is Liveline's own (fixed names, values
    /// checked where they come from), and of APNs' answers only the status and two fields are read.
    private static let http2: NIOHTTP2Handler.ConnectionConfiguration = {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.maximumRecentlyResetStreams = 10_000
        configuration.headerBlockValidation = .disabled
        return configuration
    }()

    /// Opens a connection to `endpoint`: TCP, TLS (ALPN `h2`), then HTTP/2, within
    /// `connectTimeout`; each request on it has `requestTimeout` for its answer.
    static func connect(
        to endpoint: Endpoint,
        tls: NIOSSLContext,
        group: any EventLoopGroup,
        connectTimeout: Duration,
        requestTimeout: Duration
    ) async throws -> APNsConnection {
        let usable = NIOLockedValueBox(true)
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.microseconds(connectTimeout.microseconds))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handlers = channel.pipeline.syncOperations
                    try handlers.addHandler(NIOSSLClientHandler(context: tls, serverHostname: endpoint.serverHostname))
                    try handlers.addHandler(
                        NIOHTTP2Handler(
                            mode: .client,
                            connectionConfiguration: Self.http2,
                            streamConfiguration: .init()
                        )
                    )
                    try handlers.addHandler(ConnectionWindowKeeper())
                    try handlers.addHandler(APNsStreams(usable: usable, timeout: requestTimeout))
                }
            }
            .connect(host: endpoint.address, port: endpoint.port)
            .get()
        return APNsConnection(channel: channel, usable: usable)
    }

    /// Whether new pushes may go on it: not closed, and no GOAWAY received.
    var isUsable: Bool { usable.withLockedValue { $0 } }

    /// A request for the wire: its headers (the pseudo-headers first) and body, and what is done
    /// with the answer (or its absence), exactly once, on the connection's event loop: it must
    /// not block.
    struct Outgoing: Sendable {
        let headers: HPACKHeaders
        let body: ByteBuffer
        let answered: @Sendable (Result<APNsAnswer, APNsUnanswered>) -> Void
    }

    /// Writes `requests` and flushes them together.
    func send(_ requests: [Outgoing]) {
        // A write that fails never reached the handler: the connection had closed.
        channel.writeAndFlush(requests).whenFailure { error in
            for request in requests {
                request.answered(.failure(APNsUnanswered("the connection to APNs closed: \(error)")))
            }
        }
    }

    /// Closes the connection; pushes still waiting are answered `unanswered`.
    func close() async {
        usable.withLockedValue { $0 = false }
        try? await channel.close()
    }
}

/// What APNs answered: its status, its headers (not the pseudo-headers) and its body.
struct APNsAnswer: Sendable {
    let status: Int
    let headers: [(name: String, value: String)]
    let body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// Why no answer came: a connection or TLS failure, the deadline, a stream refused by GOAWAY.
struct APNsUnanswered: Error, Sendable {
    let why: String

    init(_ why: String) {
        self.why = why
    }
}

/// The client's end of the streams of one connection, above `NIOHTTP2Handler`: opens a stream
/// per push, gathers each answer, and answers every push exactly once.
private final class APNsStreams: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = [APNsConnection.Outgoing]
    typealias OutboundOut = HTTP2Frame

    /// A push on the wire, and what has come back of its answer.
    private struct Exchange {
        let answered: @Sendable (Result<APNsAnswer, APNsUnanswered>) -> Void
        var status: Int? = nil
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
    }

    private let usable: NIOLockedValueBox<Bool>
    /// How long a push waits for its answer.
    private let timeout: Duration
    private var context: ChannelHandlerContext?
    private var exchanges: [HTTP2StreamID: Exchange] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    /// The streams in the order they opened, with when their answer is due: every push has the
    /// same timeout, so the first is always due first. One timer, for the first still waiting,
    /// serves them all (answered ones leave when they reach the front).
    private var deadlines = CircularBuffer<(streamID: HTTP2StreamID, due: NIODeadline)>()
    private var timer: Scheduled<Void>?
    /// Why no new stream may open (a GOAWAY, the connection's end); `nil` while they may.
    private var refusal: String? = nil

    init(usable: NIOLockedValueBox<Bool>, timeout: Duration) {
        self.usable = usable
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    // MARK: Outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        promise?.succeed(())
        for request in unwrapOutboundIn(data) { open(request, context: context) }
    }

    /// Opens a stream for `request`: its HEADERS, then a DATA frame that ends it.
    private func open(_ request: APNsConnection.Outgoing, context: ChannelHandlerContext) {
        if let refusal { return request.answered(.failure(APNsUnanswered(refusal))) }
        let streamID = nextStreamID
        if streamID != .maxID { nextStreamID = HTTP2StreamID(Int(streamID) + 2) }
        exchanges[streamID] = Exchange(answered: request.answered)
        deadlines.append((streamID, .now() + .microseconds(timeout.microseconds)))
        if timer == nil { armTimer(context: context) }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: request.headers)))),
            promise: nil
        )
        let written = context.eventLoop.makePromise(of: Void.self)
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))
            ),
            promise: written
        )
        written.futureResult.assumeIsolated().whenFailure { [self] error in
            finish(streamID, "the push could not be written: \(error)")
        }
        // A client's last stream id (2^31 − 1, a billion pushes): the next push goes on a new
        // connection, and this one closes once its streams are answered.
        if streamID == .maxID { refuse("the connection used up its stream ids") }
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            guard var exchange = exchanges[frame.streamID] else { return }
            for header in headers.headers {
                if header.name == ":status" {
                    exchange.status = Int(header.value)
                } else if !header.name.hasPrefix(":") {
                    exchange.headers.append((header.name, header.value))
                }
            }
            exchanges[frame.streamID] = exchange
            if headers.endStream { complete(frame.streamID) }
        case .data(let data):
            guard var exchange = exchanges[frame.streamID] else { return }
            if case .byteBuffer(let buffer) = data.data, exchange.body.count < 64 * 1024 {
                exchange.body += buffer.readableBytesView
            }
            exchanges[frame.streamID] = exchange
            if data.endStream { complete(frame.streamID) }
        case .goAway(let lastStreamID, let errorCode, let opaqueData):
            let reason = opaqueData.map { String(buffer: $0) } ?? ""
            refuse("APNs closed the connection (GOAWAY \(errorCode) \(reason))")
            for streamID in exchanges.keys where streamID > lastStreamID {
                finish(streamID, "APNs refused the stream (GOAWAY \(errorCode) \(reason))")
            }
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent {
            finish(
                closed.streamID,
                "APNs closed the stream (\(closed.reason.map { "\($0)" } ?? "no reason"))"
            )
        } else if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, negotiated != "h2" {
            refuse("the APNs host does not speak HTTP/2")
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            finish(streamError.streamID, "the stream failed: \(streamError.baseError)")
            return
        }
        refuse("the connection to APNs failed: \(error)")
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        refuse("the connection to APNs closed")
        for streamID in exchanges.keys { finish(streamID, "the connection to APNs closed") }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        refuse("the connection to APNs closed")
        for streamID in exchanges.keys { finish(streamID, "the connection to APNs closed") }
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    // MARK: Deadlines

    /// Schedules the timer for the first stream still waiting, if any.
    private func armTimer(context: ChannelHandlerContext) {
        while let first = deadlines.first, exchanges[first.streamID] == nil { deadlines.removeFirst() }
        guard let first = deadlines.first else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: first.due) { [self] in
            timer = nil
            expire(context: context)
        }
    }

    /// Answers every push whose deadline passed `unanswered` and resets its stream.
    private func expire(context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        var expired = false
        while let first = deadlines.first, first.due <= now {
            deadlines.removeFirst()
            guard finish(first.streamID, "APNs did not answer within \(timeout)") else { continue }
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: first.streamID, payload: .rstStream(.cancel))),
                promise: nil
            )
            expired = true
        }
        if expired { context.flush() }
        armTimer(context: context)
    }

    // MARK: Answers

    /// The answer gathered for a stream that APNs ended.
    private func complete(_ streamID: HTTP2StreamID) {
        guard let exchange = exchanges[streamID] else { return }
        guard let status = exchange.status else {
            finish(streamID, "APNs ended the stream without a status")
            return
        }
        finish(streamID, APNsAnswer(status: status, headers: exchange.headers, body: exchange.body))
    }

    /// Answers a push that is still waiting; `false` when it was answered already.
    @discardableResult
    private func finish(_ streamID: HTTP2StreamID, _ answer: APNsAnswer) -> Bool {
        finish(streamID, .success(answer))
    }

    /// Says that a push went unanswered, if it is still waiting; `false` when it was answered.
    @discardableResult
    private func finish(_ streamID: HTTP2StreamID, _ unanswered: String) -> Bool {
        finish(streamID, .failure(APNsUnanswered(unanswered)))
    }

    @discardableResult
    private func finish(_ streamID: HTTP2StreamID, _ result: Result<APNsAnswer, APNsUnanswered>) -> Bool {
        guard let exchange = exchanges.removeValue(forKey: streamID) else { return false }
        exchange.answered(result)
        // A connection that takes no new streams closes once its last one is answered.
        if refusal != nil && exchanges.isEmpty { context?.close(promise: nil) }
        return true
    }

    /// No new stream opens on this connection: the client opens another one, and this one
    /// closes once its streams are answered.
    private func refuse(_ why: String) {
        guard refusal == nil else { return }
        refusal = why
        usable.withLockedValue { $0 = false }
        if exchanges.isEmpty { context?.close(promise: nil) }
    }
}
