public import Tracing

/// A sampled request's place in its trace, as W3C Trace Context carries it between processes:
/// `traceparent`, and `tracestate` when the trace has one. The store keeps it with the events the
/// request appended (`event_traces`), so that their pushes, sent later by whichever worker holds
/// the activity, join the request's trace.
public struct TraceContext: Hashable, Sendable {
    public let traceparent: String
    public let tracestate: String?

    public init(traceparent: String, tracestate: String?) {
        self.traceparent = traceparent
        self.tracestate = tracestate
    }

    /// The trace context `serviceContext` carries, as the process's instrument writes it; `nil`
    /// when it writes none (tracing is off).
    public init?(of serviceContext: ServiceContext) {
        var headers: [String: String] = [:]
        InstrumentationSystem.instrument.inject(serviceContext, into: &headers, using: Headers())
        guard let traceparent = headers["traceparent"] else { return nil }
        self.init(traceparent: traceparent, tracestate: headers["tracestate"])
    }

    /// A service context holding this trace context, as the process's instrument reads it.
    public var serviceContext: ServiceContext {
        var context = ServiceContext.topLevel
        var headers = ["traceparent": traceparent]
        headers["tracestate"] = tracestate
        InstrumentationSystem.instrument.extract(headers, into: &context, using: Headers())
        return context
    }

    /// The trace's id: 32 hexadecimal digits, as trace viewers name it.
    public var traceID: Substring {
        traceparent.split(separator: "-", omittingEmptySubsequences: false).dropFirst().first ?? ""
    }

    /// Trace context headers, in a dictionary by their lowercase names.
    private struct Headers: Injector, Extractor {
        func inject(_ value: String, forKey key: String, into headers: inout [String: String]) {
            headers[key.lowercased()] = value
        }

        func extract(key: String, from headers: [String: String]) -> String? {
            headers[key.lowercased()]
        }
    }
}
