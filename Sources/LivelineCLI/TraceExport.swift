import Logging
import OTel
import ServiceLifecycle
import Tracing

/// Traces over OTLP/HTTP (swift-otel), when the standard `OTEL_*` environment variables ask for
/// them; off otherwise. Only traces: metrics stay on Prometheus (`/metrics`), logs on standard
/// error. Everything else — the collector's address, the protocol (`http/protobuf` by default,
/// or `http/json`), headers, the sampler (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`), the
/// service's name (`liveline` unless `OTEL_SERVICE_NAME` says otherwise) — is read by swift-otel
/// from the same variables.
enum TraceExport {
    /// Whether `environment` asks for traces: an OTLP endpoint for them
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or
    /// `OTEL_TRACES_EXPORTER=otlp`, unless `OTEL_SDK_DISABLED=true` or
    /// `OTEL_TRACES_EXPORTER=none`.
    static func isRequested(by environment: [String: String]) -> Bool {
        let exporter = environment["OTEL_TRACES_EXPORTER"]?.lowercased()
        guard environment["OTEL_SDK_DISABLED"]?.lowercased() != "true", exporter != "none" else { return false }
        return exporter == "otlp" || environment["OTEL_EXPORTER_OTLP_ENDPOINT"] != nil
            || environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] != nil
    }

    /// Makes the process's tracer (the global one: spans from anywhere go to it) and returns the
    /// service that exports its spans, to run before everything that makes spans and to stop
    /// after it; `nil` when `environment` does not ask for traces.
    static func start(environment: [String: String], logger: Logger) throws -> (any Service)? {
        guard isRequested(by: environment) else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "liveline"
        configuration.diagnosticLogger = .custom(logger)
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.traces.enabled = true
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        logger.notice("traces go to OpenTelemetry (OTLP/HTTP), as the OTEL_* variables say")
        return service
    }
}
