// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "liveline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "liveline", targets: ["liveline"]),
        // For the benchmark package in Benchmarks/.
        .library(name: "ActivityLifecycle", targets: ["ActivityLifecycle"]),
        .library(name: "CanonicalJSON", targets: ["CanonicalJSON"]),
        .library(name: "EventStore", targets: ["EventStore"]),
        .library(name: "EmbeddedPostgres", targets: ["EmbeddedPostgres"]),
        .library(name: "LogArchive", targets: ["LogArchive"]),
        .library(name: "Postgres", targets: ["Postgres"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        // Traces only, over OTLP/HTTP: no gRPC to build.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // Strict JSON (parser, canonical writer, values, exact numbers) and exact RFC 3339
        // timestamps: the core the domain, the store and HTTP share. No Foundation.
        .target(
            name: "CanonicalJSON",
            swiftSettings: swiftSettings
        ),
        // The pure domain: ids, content, states, commands, events, the state machine, deadlines,
        // policy. No I/O, no clock reads.
        .target(
            name: "ActivityLifecycle",
            dependencies: ["CanonicalJSON"],
            swiftSettings: swiftSettings
        ),
        // The C API of libpq, from Debian's libpq-dev. Only `Postgres` imports it.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The one safe Swift wrapper around libpq: connections, queries, transactions, pool.
        .target(
            name: "Postgres",
            dependencies: [
                "CLibPQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // A private PostgreSQL cluster (initdb/pg_ctl) for `liveline dev` and for tests.
        .target(
            name: "EmbeddedPostgres",
            dependencies: [
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: swiftSettings
        ),
        // The archives of retired partitions: gzip-compressed CSV with a manifest (sizes,
        // SHA-256, rows), written, flushed and checked before anything is dropped, and read back
        // by `liveline verify --archive`. Knows files and CSV, not the database.
        .target(
            name: "LogArchive",
            dependencies: [
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The event store, sorted by feature (commands, reading, apps, deliveries, deadlines,
        // retention, schema), each with its SQL; database errors end at its boundary.
        .target(
            name: "EventStore",
            dependencies: [
                "ActivityLifecycle",
                "CanonicalJSON",
                "LogArchive",
                "Postgres",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The operators' tools over the log: verify (strict folds, deadlines, the cap history,
        // the archives), audit, and their reports. They read through the store, which runs the
        // SQL (its stream reader, its cap history, its replay).
        .target(
            name: "EventLogTools",
            dependencies: [
                "ActivityLifecycle",
                "CanonicalJSON",
                "Delivery",
                "EventStore",
                "LogArchive",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Delivery to devices: rendering an event into an APNs request (pure), the APNs client
        // (HTTP/2, provider tokens), and the worker that follows the log and has the store
        // record its outcomes.
        .target(
            name: "Delivery",
            dependencies: [
                "ActivityLifecycle",
                "CanonicalJSON",
                "HTTP2Window",
                "EventStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // Keeps an HTTP/2 connection's flow-control window open, for the APNs client and the
        // local APNs, which both work on frames.
        .target(
            name: "HTTP2Window",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ],
            swiftSettings: swiftSettings
        ),
        // A conformant local APNs (HTTP/2 over TLS, a self-signed certificate made at start-up)
        // for tests, benchmarks and `liveline dev`: checks what Apple checks, keeps what it got.
        .target(
            name: "LocalAPNs",
            dependencies: [
                "CanonicalJSON",
                "HTTP2Window",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: swiftSettings
        ),
        // The support console under /console: server-rendered pages (Mustache templates, which
        // escape what they write) over the log, behind sessions opened with a key.
        .target(
            name: "SupportConsole",
            dependencies: [
                "ActivityLifecycle",
                "CanonicalJSON",
                "EventLogTools",
                "EventStore",
                "LogArchive",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            resources: [.copy("Templates"), .copy("Assets")],
            swiftSettings: swiftSettings
        ),
        // The HTTP API on Hummingbird: `buildApplication(…)`. Its types and routing are generated
        // from openapi.yaml, which it also serves.
        .target(
            name: "LivelineHTTP",
            dependencies: [
                "ActivityLifecycle",
                "CanonicalJSON",
                "Delivery",
                "EventStore",
                "SupportConsole",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.copy("openapi.yaml")],
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        // The `liveline` commands: serve, dev, migrate.
        .target(
            name: "LivelineCLI",
            dependencies: [
                "ActivityLifecycle",
                "CanonicalJSON",
                "Delivery",
                "LocalAPNs",
                "EmbeddedPostgres",
                "EventLogTools",
                "EventStore",
                "LivelineHTTP",
                "LogArchive",
                "Postgres",
                "SupportConsole",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "liveline",
            dependencies: [
                "LivelineCLI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test helpers: a throwaway PostgreSQL cluster shared by a test process, a fresh database per suite.
        .target(
            name: "TestSupport",
            dependencies: [
                "CanonicalJSON",
                "EmbeddedPostgres",
                "EventStore",
                "Postgres",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Property checks whose thrown errors fail them (`checkProperty`), for every test target.
        .target(
            name: "PropertyChecks",
            dependencies: [.product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CanonicalJSONTests",
            dependencies: [
                "CanonicalJSON",
                .product(name: "PropertyBased", package: "swift-property-based"), "PropertyChecks",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ActivityLifecycleTests",
            dependencies: [
                "ActivityLifecycle", "CanonicalJSON",
                .product(name: "PropertyBased", package: "swift-property-based"), "PropertyChecks",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EventLogToolsTests",
            dependencies: [
                "ActivityLifecycle", "CanonicalJSON", "EmbeddedPostgres", "EventLogTools", "EventStore", "LogArchive",
                "Postgres",
                "TestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"), "PropertyChecks",
            ],
            exclude: ["Snapshots"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DeliveryTests",
            dependencies: [
                "ActivityLifecycle", "CanonicalJSON", "Delivery", "EventLogTools", "EventStore", "LocalAPNs",
                "Postgres",
                "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PropertyBased", package: "swift-property-based"), "PropertyChecks",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LogArchiveTests",
            dependencies: [
                "LogArchive",
                .product(name: "PropertyBased", package: "swift-property-based"), "PropertyChecks",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PostgresTests",
            dependencies: ["Postgres", "TestSupport", "EmbeddedPostgres"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EventStoreTests",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                "ActivityLifecycle", "CanonicalJSON",
                "EventStore",
                "LogArchive",
                "Postgres",
                "TestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "PropertyBased", package: "swift-property-based"), "PropertyChecks",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LivelineCLITests",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                "ActivityLifecycle", "CanonicalJSON", "EmbeddedPostgres", "EventStore", "LivelineCLI", "LocalAPNs",
                "LogArchive", "Postgres",
                "TestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Calls the server through a client generated from the same openapi.yaml (a symlink).
        .testTarget(
            name: "LivelineHTTPTests",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                "ActivityLifecycle",
                "CanonicalJSON",
                "EmbeddedPostgres",
                "Delivery",
                "LocalAPNs",
                "EventLogTools",
                "EventStore",
                "LivelineHTTP",
                "LogArchive",
                "Postgres",
                "SupportConsole",
                "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "PropertyBased", package: "swift-property-based"), "PropertyChecks",
            ],
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
    ]
)
