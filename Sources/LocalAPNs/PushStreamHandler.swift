import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// One HTTP/2 stream: gathers the request, asks `LocalAPNs.answer`, and answers.
final class PushStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// APNs takes 4096 bytes; a larger body is read only far enough to refuse it.
    private static let bodyLimit = 8192

    private let connection: Int
    private let state: NIOLockedValueBox<LocalAPNs.State>
    private let clock: @Sendable () -> Int64
    private let logger: Logger
    private let onPush: (@Sendable (LocalAPNs.ReceivedPush) -> Void)?
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(
        connection: Int,
        state: NIOLockedValueBox<LocalAPNs.State>,
        clock: @escaping @Sendable () -> Int64,
        logger: Logger,
        onPush: (@Sendable (LocalAPNs.ReceivedPush) -> Void)?
    ) {
        self.connection = connection
        self.state = state
        self.clock = clock
        self.logger = logger
        self.onPush = onPush
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(let buffer):
            if body.count <= Self.bodyLimit { body += buffer.readableBytesView.prefix(Self.bodyLimit + 1 - body.count) }
        case .end:
            guard let head else { return context.close(promise: nil) }
            let request = IncomingRequest(
                method: head.method.rawValue,
                path: head.uri,
                headers: head.headers.map { (name: $0.name.lowercased(), value: $0.value) },
                body: body
            )
            let now = clock()
            let (answer, accepted) = state.withLockedValue { state in
                let answer = LocalAPNs.answer(request, on: connection, state: &state, now: now)
                guard case .respond(200, _, _) = answer else { return (answer, nil as LocalAPNs.ReceivedPush?) }
                return (answer, state.received.last)
            }
            respond(answer, context: context)
            if let accepted { onPush?(accepted) }
        }
    }

    private func respond(_ answer: Answer, context: ChannelHandlerContext) {
        switch answer {
        case .respond(let status, let headers, let body):
            var head = HTTPResponseHead(version: .http2, status: HTTPResponseStatus(statusCode: status))
            for (name, value) in headers { head.headers.add(name: name, value: value) }
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if !body.isEmpty {
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        case .stall:
            logger.debug("local APNs: stalling a stream", metadata: ["connection": "\(connection)"])
        case .goAway(let reason):
            // Refuse this stream and every later one, say why, and close the connection.
            guard let parent = context.channel.parent else { return context.close(promise: nil) }
            let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? .maxID
            let lastStreamID = HTTP2StreamID(max(0, Int(streamID) - 2))
            var opaqueData = ByteBuffer()
            opaqueData.writeString(#"{"reason":"\#(reason)"}"#)
            let frame = HTTP2Frame(
                streamID: .rootStream,
                payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: opaqueData)
            )
            parent.writeAndFlush(frame).whenComplete { _ in parent.close(promise: nil) }
        }
    }
}
