public import NIOCore
public import NIOHTTP2

/// Keeps an HTTP/2 connection's flow-control window for what the peer sends open, above
/// `NIOHTTP2Handler` used on frames (without NIO's stream multiplexer, which does this itself):
/// whenever half of HTTP/2's initial 65,535 bytes is used, a WINDOW_UPDATE opens it again.
/// Without it a connection stalls once 64 KB have come in. Streams are short and small, so their
/// own windows need no update. Every frame and event passes on unchanged.
public final class ConnectionWindowKeeper: ChannelInboundHandler {
    public typealias InboundIn = HTTP2Frame
    public typealias InboundOut = HTTP2Frame
    public typealias OutboundOut = HTTP2Frame

    private static let window = 65_535

    public init() {}

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let changed = event as? NIOHTTP2WindowUpdatedEvent, changed.streamID == .rootStream,
            let room = changed.inboundWindowSize, room < Self.window / 2
        {
            let update = HTTP2Frame(
                streamID: .rootStream,
                payload: .windowUpdate(windowSizeIncrement: Self.window - room)
            )
            context.writeAndFlush(wrapOutboundOut(update), promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }
}
