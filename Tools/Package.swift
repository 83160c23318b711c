// swift-tools-version: 6.2
//
// HangWatch's tools: everything that is not the embeddable library. The `hangwatch` CLI, the
// `hangwatchd` agent, the demos, and the tests that use HangWatch from outside (real Hummingbird 2 and Vapor 4
// servers under wrk, Prometheus, an OpenTelemetry receiver, a browser).
//
// A package of its own so that a service that embeds HangWatch (the package one directory up)
// resolves swift-log and swift-nio only, never what the tools need: swift-argument-parser,
// swift-service-lifecycle, swift-metrics, swift-prometheus, swift-otel, Hummingbird, Vapor.
//
// Layers point one way:
//   hangwatch -> HangWatchDumpChannel -> HangWatchReading -> HangWatchRendering -> HangWatchReport;
//   hangwatch -> HangWatchProfiles, HangWatchSymbolication -> HangWatchReport
//   hangwatchd -> HangWatchAgent -> HangWatch (it watches its own loop), HangWatchSymbolication
import PackageDescription

let package = Package(
    name: "HangWatchTools",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hangwatch", targets: ["hangwatch"]),
        .executable(name: "hangwatchd", targets: ["hangwatchd"]),
        .executable(name: "hangwatch-demo", targets: ["hangwatch-demo"]),
        .executable(name: "hangwatch-async-demo", targets: ["hangwatch-async-demo"]),
        // For the report parser's fuzz target (Fuzz/), which feeds the CLI's views and exporters too.
        .library(name: "HangWatchReading", targets: ["HangWatchReading"]),
        .library(name: "HangWatchProfiles", targets: ["HangWatchProfiles"]),
    ],
    // What a build pays for, by trait. With none (`--disable-default-traits`: `make demo`), the CLI
    // and the demos resolve swift-argument-parser beside the library's own packages, six in all.
    // `Agent` (default): the agent's Prometheus, OpenTelemetry and service-lifecycle packages.
    // `Servers` (default): Hummingbird, for the service the integration tests and the bench watch.
    // `Vapor`: the Vapor 4 service is built with Vapor only when asked (`--traits Vapor`: its
    // release build for its integration test and the bench); Vapor brings some twenty modules
    // (swift-crypto's BoringSSL among them) that nothing else here needs. A target whose trait is
    // off does not build (its imports are missing): nothing asks for one then.
    traits: [
        .trait(name: "Agent", description: "hangwatchd: Prometheus, OTLP, ServiceLifecycle"),
        .trait(name: "Servers", description: "the Hummingbird service and bench the integration tests run"),
        .trait(name: "Vapor", description: "the Vapor 4 service", enabledTraits: ["Servers"]),
        .default(enabledTraits: ["Agent", "Servers"]),
    ],
    dependencies: [
        .package(name: "HangWatch", path: ".."),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // The CLI and the agent's command line.
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // The agent.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // OTLP over HTTP only: gRPC would add three packages and a minute of build for nothing more.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // (swift-otel's own: the agent puts a hang's traceparent into the context its log record reads.)
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // The real server the integration tests and the bench watch.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // A real Vapor 4 server: synchronous routes on its event loops (an integration test).
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
    ],
    targets: [
        // zlib (Debian: zlib1g-dev), for gzip'd pprof profiles. Used by the CLI's exports only.
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // Queues a signal to one thread of another process (`hangwatch dump`): the one C the CLI has.
        .target(name: "CThreadSignal", cSettings: [.define("_GNU_SOURCE")]),
        // The CLI's side of reading: many reports at once (the catalog and its index), filters,
        // groups, the report library a command reads through (which directory, `latest`, loading
        // and naming), monitored hours. The agent never links it.
        .target(
            name: "HangWatchReading",
            dependencies: [
                "HangWatchRendering", .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchSymbolication", package: "HangWatch"),
            ]
        ),
        // What the CLI prints, as strings: tables cut to the terminal, colours, times, errors in
        // plain words and the exit codes, and `hangwatch show`'s and `dump`'s text of a report
        // (tested as strings).
        .target(
            name: "HangWatchRendering",
            dependencies: [.product(name: "HangWatchReport", package: "HangWatch")]
        ),
        // The dump channel: which heartbeat to believe (`HeartbeatTrust`, `TrustedDirectory`, the
        // process's facts), asking a monitor for a thread dump and reading its answer.
        .target(
            name: "HangWatchDumpChannel",
            dependencies: ["HangWatchReading", "HangWatchRendering", "CThreadSignal", .product(name: "HangWatchReport", package: "HangWatch")]
        ),
        // Folded stacks, speedscope files, pprof profiles and SVG flame graphs from reports.
        .target(
            name: "HangWatchProfiles",
            dependencies: [.product(name: "HangWatchReport", package: "HangWatch"), "CZlib"]
        ),
        // The `hangwatch` command: read, group, explain and export reports.
        .executableTarget(
            name: "hangwatch",
            dependencies: [
                "HangWatchReading", "HangWatchRendering", "HangWatchProfiles", "HangWatchDumpChannel",
                .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchSymbolication", package: "HangWatch"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The host agent's logic: spool, retention, dead hangs, heartbeats, enrichment, systemd.
        .target(
            name: "HangWatchAgent",
            dependencies: [
                .product(name: "HangWatch", package: "HangWatch"),
                .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchSymbolication", package: "HangWatch"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Agent"])),
                .product(name: "UnixSignals", package: "swift-service-lifecycle", condition: .when(traits: ["Agent"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Agent"])),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Agent"])),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["Agent"])),
                .product(name: "Instrumentation", package: "swift-distributed-tracing", condition: .when(traits: ["Agent"])),
            ]
        ),
        // `hangwatchd`: the agent, a systemd service.
        .executableTarget(
            name: "hangwatchd",
            dependencies: [
                "HangWatchAgent",
                .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Agent"])),
            ]
        ),
        // The demo service `make demo` runs: it hangs five ways under the monitor.
        .executableTarget(
            name: "hangwatch-demo",
            dependencies: [
                .product(name: "HangWatch", package: "HangWatch"),
                .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchSymbolication", package: "HangWatch"),
            ]
        ),
        // An `async` @main service with no run loop (the main-queue source, end to end).
        .executableTarget(
            name: "hangwatch-async-demo",
            dependencies: [
                .product(name: "HangWatch", package: "HangWatch"), .product(name: "HangWatchReport", package: "HangWatch"),
            ]
        ),
        // A real Hummingbird 2 server watched as the README shows (the integration tests run it
        // under wrk), and its throughput bench (`make bench`).
        // What the two test services share: their command line, the measurements their handlers
        // write, the bench's watch toggle (SIGUSR1/SIGUSR2) and request count.
        .target(
            name: "ServiceHarness",
            dependencies: [
                .product(name: "HangWatchNIO", package: "HangWatch"), .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "hangwatch-hummingbird-service",
            dependencies: [
                "ServiceHarness", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HangWatch", package: "HangWatch"),
                .product(name: "HangWatchNIO", package: "HangWatch"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Servers"])),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .executableTarget(name: "hangwatch-hummingbird-bench"),
        // A real Vapor 4 server whose synchronous routes block its event loops, watched as a user
        // would (`HangMonitor.watch(app.eventLoopGroup, …)`); its integration test runs the release build.
        .executableTarget(
            name: "hangwatch-vapor-service",
            dependencies: [
                "ServiceHarness", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HangWatch", package: "HangWatch"),
                .product(name: "HangWatchNIO", package: "HangWatch"),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        // A service its test builds twice (RebuildGroupingTests): the second build, made with
        // HANGWATCH_REBUILD_VARIANT=2 in the environment, adds code before the hang sites, so every
        // address moves while the sites' code stays the same.
        .executableTarget(
            name: "hangwatch-rebuild-shop",
            dependencies: [.product(name: "HangWatch", package: "HangWatch")],
            swiftSettings: Context.environment["HANGWATCH_REBUILD_VARIANT"] == "2" ? [.define("REBUILD_VARIANT_2")] : []
        ),

        // Tests, by kind (the Makefile picks a phase by the target's name): `…Tests` are pure or
        // run the tools on fixtures, side by side; `…IntegrationTests` use real servers, browsers
        // and collectors, one at a time.
        .target(
            name: "ToolsTestSupport",
            dependencies: [
                .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchTestSupport", package: "HangWatch"),
            ],
            path: "Tests/ToolsTestSupport"
        ),
        .testTarget(
            name: "HangWatchReadingTests",
            dependencies: [
                "HangWatchReading", .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchTestSupport", package: "HangWatch"),
            ]
        ),
        .testTarget(
            name: "HangWatchRenderingTests",
            dependencies: [
                "HangWatchRendering", .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchTestSupport", package: "HangWatch"),
            ]
        ),
        .testTarget(
            name: "HangWatchProfilesTests",
            dependencies: [
                "HangWatchProfiles", .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchTestSupport", package: "HangWatch"),
            ]
        ),
        // The CLI as a person runs it (its binary); its logic is tested in its libraries' targets.
        .testTarget(
            name: "hangwatchTests",
            dependencies: [
                "hangwatch", "ToolsTestSupport", "HangWatchReading",
                .product(name: "HangWatchReport", package: "HangWatch"), .product(name: "HangWatchTestSupport", package: "HangWatch"),
            ]
        ),
        .testTarget(
            name: "HangWatchDumpChannelTests",
            dependencies: [
                "HangWatchDumpChannel", .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchTestSupport", package: "HangWatch"),
            ]
        ),
        .testTarget(
            name: "HangWatchAgentTests",
            dependencies: [
                "HangWatchAgent", .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchSymbolication", package: "HangWatch"),
                .product(name: "HangWatchTestSupport", package: "HangWatch"),
            ]
        ),
        .testTarget(
            name: "hangwatchdTests",
            dependencies: [
                "HangWatchAgent", "ToolsTestSupport", .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchTestSupport", package: "HangWatch"),
            ]
        ),
        .testTarget(
            name: "HangWatchIntegrationTests",
            dependencies: [
                "HangWatchProfiles", "HangWatchAgent", "ToolsTestSupport",
                .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchSymbolication", package: "HangWatch"),
                .product(name: "HangWatchTestSupport", package: "HangWatch"),
            ],
            // Run by the tests from the source tree (a browser driver, an OTLP receiver), not built.
            exclude: ["Fixtures"]
        ),
    ]
)
