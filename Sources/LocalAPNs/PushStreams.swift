import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The server's end of one connection's streams, above `NIOHTTP2Handler`: gathers each
/// request's HEADERS and DATA by stream, asks `LocalAPNs.answer` once the client ends the stream,
/// and answers with frames on the connection (no channel per stream); the answers of one read
/// leave in one flush.
final class PushStreams: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// APNs takes 4096 bytes; a larger body is read only far enough to refuse it.
    private static let bodyLimit = 8192

    private struct Incoming {
        let headers: HPACKHeaders
        var body: [UInt8] = []
    }

    private let connection: Int
    private let state: NIOLockedValueBox<LocalAPNs.State>
    private let clock: @Sendable () -> Int64
    private let logger: Logger
    private let onAccept: (@Sendable (LocalAPNs.Accepted) -> Void)?
    private var incoming: [HTTP2StreamID: Incoming] = [:]
    private var mustFlush = false

    init(
        connection: Int,
        state: NIOLockedValueBox<LocalAPNs.State>,
        clock: @escaping @Sendable () -> Int64,
        logger: Logger,
        onAccept: (@Sendable (LocalAPNs.Accepted) -> Void)?
    ) {
        self.connection = connection
        self.state = state
        self.clock = clock
        self.logger = logger
        self.onAccept = onAccept
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            incoming[frame.streamID] = Incoming(headers: headers.headers)
            if headers.endStream { answer(frame.streamID, context: context) }
        case .data(let data):
            guard var request = incoming[frame.streamID] else { return }
            if case .byteBuffer(let buffer) = data.data, request.body.count <= Self.bodyLimit {
                request.body += buffer.readableBytesView.prefix(Self.bodyLimit + 1 - request.body.count)
            }
            incoming[frame.streamID] = request
            if data.endStream { answer(frame.streamID, context: context) }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if mustFlush {
            mustFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent {
            incoming[closed.streamID] = nil
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func answer(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let request = incoming.removeValue(forKey: streamID) else { return }
        var headers: [(name: String, value: String)] = []
        for header in request.headers where !header.name.hasPrefix(":") {
            headers.append((name: header.name, value: header.value))
        }
        let incomingRequest = IncomingRequest(
            method: request.headers.first(name: ":method") ?? "",
            path: request.headers.first(name: ":path") ?? "",
            headers: headers,
            body: request.body
        )
        let now = clock()
        let (answer, accepted) = state.withLockedValue { state in
            defer { state.accepted = nil }
            return (LocalAPNs.answer(incomingRequest, on: connection, state: &state, now: now), state.accepted)
        }
        respond(answer, on: streamID, context: context)
        if let accepted { onAccept?(accepted) }
    }

    private func respond(_ answer: Answer, on streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        switch answer {
        case .respond(let status, let fields, let body):
            var headers = HPACKHeaders([(":status", String(status))])
            for (name, value) in fields { headers.add(name: name, value: value) }
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: body.isEmpty)))
                ),
                promise: nil
            )
            if !body.isEmpty {
                context.write(
                    wrapOutboundOut(
                        HTTP2Frame(
                            streamID: streamID,
                            payload: .data(.init(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: true))
                        )
                    ),
                    promise: nil
                )
            }
            mustFlush = true
        case .stall:
            logger.debug("local APNs: stalling a stream", metadata: ["connection": "\(connection)"])
        case .goAway(let reason):
            // Refuse this stream and every later one, say why, and close the connection.
            let lastStreamID = HTTP2StreamID(max(0, Int(streamID) - 2))
            var opaqueData = ByteBuffer()
            opaqueData.writeString(#"{"reason":"\#(reason)"}"#)
            let frame = HTTP2Frame(
                streamID: .rootStream,
                payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: opaqueData)
            )
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
