// swift-tools-version: 6.1
//
// HangWatch: a main-thread hang monitor for Swift services on Linux.
//
// Layers point one way:
//   CHangWatchCapture (C, async-signal-safe) <- HangWatch (the embeddable monitor) -> HangWatchReport
//   HangWatchSymbolication -> HangWatchReport;  CLI / agent -> HangWatchReport (+ symbolication)
//   HangWatchAgent -> HangWatch (it watches its own loop), HangWatchSymbolication, ServiceLifecycle
// The embeddable library depends on swift-log only.
import PackageDescription

let package = Package(
    name: "HangWatch",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HangWatch", targets: ["HangWatch"]),
        .library(name: "HangWatchReport", targets: ["HangWatchReport"]),
        .library(name: "HangWatchSymbolication", targets: ["HangWatchSymbolication"]),
        .library(name: "HangWatchExport", targets: ["HangWatchExport"]),
        // SwiftNIO event loops; a separate product so the core never depends on swift-nio.
        .library(name: "HangWatchNIO", targets: ["HangWatchNIO"]),
        .executable(name: "hangwatch", targets: ["hangwatch"]),
        .executable(name: "hangwatchd", targets: ["hangwatchd"]),
        .executable(name: "hangwatch-demo", targets: ["hangwatch-demo"]),
        .executable(name: "hangwatch-async-demo", targets: ["hangwatch-async-demo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // The CLI only; never a dependency of the embeddable library.
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // The agent only.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // OTLP over HTTP only: gRPC would add three packages and a minute of build for nothing more.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // Debian: libunwind-dev (libunwind 1.6.2). Only the local unwinder is linked.
        .systemLibrary(
            name: "CLibunwind",
            pkgConfig: "libunwind",
            providers: [.apt(["libunwind-dev"])]
        ),
        // Debian: libdw-dev (elfutils). Used by symbolication only, never by the embeddable monitor.
        .systemLibrary(
            name: "CLibdw",
            pkgConfig: "libdw",
            providers: [.apt(["libdw-dev"])]
        ),
        // zlib (Debian: zlib1g-dev), for gzip'd pprof profiles. Used by the CLI's exports only.
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // glibc's dl_iterate_phdr and the ELF types, for reading the loaded images (header only).
        .systemLibrary(name: "CLinkMap"),
        // epoll and eventfd (header only), for watching an event loop's own epoll instance.
        .systemLibrary(name: "CEpoll"),
        // The only code that runs inside a signal handler. C, async-signal-safe, mechanism only.
        .target(
            name: "CHangWatchCapture",
            dependencies: ["CLibunwind"],
            cSettings: [.define("_GNU_SOURCE")]
        ),
        .target(
            name: "HangWatchReport",
            dependencies: []
        ),
        // The CLI's side of reading: many reports at once (the catalog and its index), filters,
        // groups. The agent never links it.
        .target(
            name: "HangWatchReading",
            dependencies: ["HangWatchReport"]
        ),
        .target(
            name: "HangWatch",
            dependencies: [
                "CHangWatchCapture",
                "CLinkMap",
                "CEpoll",
                "HangWatchReport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HangWatchSymbolication",
            dependencies: ["CLibdw", "HangWatchReport"],
            // __cxa_demangle, for C++ frames.
            linkerSettings: [.linkedLibrary("stdc++")]
        ),
        // Watching SwiftNIO event loops (one monitor per loop, pinged with `execute`).
        .target(
            name: "HangWatchNIO",
            dependencies: [
                "HangWatch", .product(name: "NIOCore", package: "swift-nio"),
                // (EventLoopTicks: the metrics delegate of `MultiThreadedEventLoopGroup`.)
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Folded stacks, speedscope files and SVG flame graphs from reports.
        .target(
            name: "HangWatchExport",
            dependencies: ["HangWatchReport", "CZlib"]
        ),
        // The `hangwatch` command: read, group, explain and export reports.
        .executableTarget(
            name: "hangwatch",
            dependencies: [
                "HangWatchReport", "HangWatchReading", "HangWatchSymbolication", "HangWatchExport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The host agent's logic: spool, retention, dead hangs, heartbeats, enrichment, systemd.
        .target(
            name: "HangWatchAgent",
            dependencies: [
                "HangWatch", "HangWatchReport", "HangWatchSymbolication",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "OTel", package: "swift-otel"),
            ]
        ),
        // `hangwatchd`: the agent, a systemd service.
        .executableTarget(
            name: "hangwatchd",
            dependencies: [
                "HangWatchAgent", "HangWatchReport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "hangwatch-demo",
            dependencies: ["HangWatch", "HangWatchReport", "HangWatchSymbolication"]
        ),
        // Benchmarks: baselines (bare observers, the naive design) live here, not in the product.
        // An `async` @main service with no run loop (the main-queue source, end to end).
        .executableTarget(
            name: "hangwatch-async-demo",
            dependencies: ["HangWatch", "HangWatchReport"]
        ),
        .executableTarget(
            name: "hangwatch-bench",
            dependencies: [
                "HangWatch", "HangWatchReport", "HangWatchSymbolication", "HangWatchNIO",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The differential test of the blocked-thread unwinder (not a product): blocks its main thread
        // in each kind of system call and compares the blocked-thread stack with the thread's own.
        .executableTarget(
            name: "hangwatch-stackcorpus",
            dependencies: ["HangWatch", "HangWatchSymbolication", "CStackCorpus"],
            // Each chain function stays itself in a release build (not merged with its look-alikes).
            swiftSettings: [.unsafeFlags(["-Xfrontend", "-disable-llvm-merge-functions-pass"])]
        ),
        // C callers for the corpus, built as C libraries are (optimised, no frame pointer).
        .target(
            name: "CStackCorpus",
            cSettings: [.unsafeFlags(["-O2", "-fomit-frame-pointer"])]
        ),
        // A service that misbehaves on request, run by the fault-injection tests (not a product).
        .executableTarget(
            name: "hangwatch-faults",
            dependencies: ["HangWatch", "HangWatchReport"]
        ),
        // What the test targets share: the watchdog's fakes (a scripted clock, sampler and
        // environment), running the package's executables, report directories and fixtures.
        .target(
            name: "HangWatchTestSupport",
            dependencies: ["HangWatch", "HangWatchReport", "HangWatchSymbolication", .product(name: "Logging", package: "swift-log")],
            path: "Tests/HangWatchTestSupport"
        ),
        .testTarget(
            name: "HangWatchTests",
            dependencies: [
                "HangWatch", "HangWatchReport", "HangWatchSymbolication", "HangWatchTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HangWatchReadingTests",
            dependencies: ["HangWatchReading", "HangWatchReport", "HangWatchTestSupport"]
        ),
        .testTarget(
            name: "HangWatchReportTests",
            dependencies: ["HangWatchReport", "HangWatchTestSupport"]
        ),
        .testTarget(
            name: "HangWatchExportTests",
            dependencies: ["HangWatchExport", "HangWatchReport", "HangWatchTestSupport"],
            // Run by the tests from the source tree (the flame graph in a real browser), not built.
            exclude: ["Fixtures/flamegraph_browser.py"]
        ),
        .testTarget(
            name: "hangwatchTests",
            dependencies: ["HangWatchReport", "HangWatchTestSupport"]
        ),
        .testTarget(
            name: "HangWatchAgentTests",
            dependencies: ["HangWatchAgent", "HangWatchReport", "HangWatchTestSupport"]
        ),
        .testTarget(
            name: "hangwatchdTests",
            dependencies: ["HangWatchAgent", "HangWatchReport", "HangWatchTestSupport"],
            // Run by the tests from the source tree (a Python OTLP receiver), not built.
            exclude: ["Fixtures/otlp_receiver.py"]
        ),
        .testTarget(
            name: "HangWatchNIOTests",
            dependencies: [
                "HangWatchNIO", "HangWatch", "HangWatchReport", "HangWatchSymbolication", "HangWatchTestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "HangWatchSymbolicationTests",
            dependencies: ["HangWatchSymbolication", "HangWatchReport"]
        ),
    ]
)
