import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An OpenTelemetry collector on loopback, for tests: it takes the spans a process exports over
/// OTLP/HTTP as JSON (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`), POSTed to `/v1/traces`, and
/// keeps them, so that a test reads them without a network or a collector.
final class OTLPReceiver: Sendable {
    struct Link: Hashable, Sendable {
        let traceID: String
        let spanID: String
    }

    struct Span: Hashable, Sendable {
        let traceID: String
        let spanID: String
        /// Empty for a trace's root.
        let parentSpanID: String
        let name: String
        /// OTLP's `SpanKind`: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
        let kind: Int
        /// Each attribute's value as text.
        let attributes: [String: String]
        let links: [Link]
        /// OTLP's `StatusCode`: 0 unset, 1 ok, 2 error.
        let status: Int
    }

    let port: Int
    private let channel: any Channel
    private let spans: NIOLockedValueBox<[Span]>

    private init(port: Int, channel: any Channel, spans: NIOLockedValueBox<[Span]>) {
        self.port = port
        self.channel = channel
        self.spans = spans
    }

    static func start() async throws -> OTLPReceiver {
        let spans = NIOLockedValueBox<[Span]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(ExportHandler(spans: spans))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return OTLPReceiver(port: channel.localAddress!.port!, channel: channel, spans: spans)
    }

    /// `OTEL_EXPORTER_OTLP_ENDPOINT` for a process that exports here.
    var endpoint: String { "http://127.0.0.1:\(port)" }

    /// The spans received so far.
    var received: [Span] { spans.withLockedValue { $0 } }

    func close() async {
        try? await channel.close()
    }

    /// Reads each POST's body as an `ExportTraceServiceRequest` and answers it with an empty
    /// `ExportTraceServiceResponse`.
    private final class ExportHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let spans: NIOLockedValueBox<[Span]>
        var body = ByteBuffer()

        init(spans: NIOLockedValueBox<[Span]>) {
            self.spans = spans
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head:
                body.clear()
            case .body(var part):
                body.writeBuffer(&part)
            case .end:
                let received = Self.spans(in: Data(body.readableBytesView))
                spans.withLockedValue { $0 += received }
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: "application/json")
                headers.add(name: "Content-Length", value: "2")
                context.write(
                    wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                    promise: nil
                )
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "{}")))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }

        static func spans(in json: Data) -> [Span] {
            guard let root = try? JSONSerialization.jsonObject(with: json) as? [String: Any] else { return [] }
            let resourceSpans = root["resourceSpans"] as? [[String: Any]] ?? []
            return resourceSpans.flatMap { resource in
                (resource["scopeSpans"] as? [[String: Any]] ?? []).flatMap { scope in
                    (scope["spans"] as? [[String: Any]] ?? []).map(span)
                }
            }
        }

        static func span(_ span: [String: Any]) -> Span {
            Span(
                traceID: id(span["traceId"]),
                spanID: id(span["spanId"]),
                parentSpanID: id(span["parentSpanId"]),
                name: span["name"] as? String ?? "",
                kind: number(span["kind"]),
                attributes: Dictionary(
                    (span["attributes"] as? [[String: Any]] ?? []).compactMap { attribute in
                        guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any],
                            let text = value.values.first.map({ "\($0)" })
                        else { return nil }
                        return (key, text)
                    }
                ) { first, _ in first },
                links: (span["links"] as? [[String: Any]] ?? []).map { link in
                    Link(traceID: id(link["traceId"]), spanID: id(link["spanId"]))
                },
                status: number((span["status"] as? [String: Any])?["code"])
            )
        }

        /// A trace or span id in lowercase hex, as OTLP's JSON writes it (or in base64, as a
        /// protobuf JSON writer without OTLP's exception does).
        static func id(_ value: Any?) -> String {
            guard let text = value as? String, !text.isEmpty else { return "" }
            if text.count == 32 || text.count == 16, text.allSatisfy(\.isHexDigit) { return text.lowercased() }
            guard let bytes = Data(base64Encoded: text) else { return text }
            return bytes.map { String(format: "%02x", $0) }.joined()
        }

        static func number(_ value: Any?) -> Int {
            (value as? Int) ?? (value as? String).flatMap { Int($0) } ?? 0
        }
    }
}
