// swift-tools-version: 6.1
//
// HangWatch: a main-thread hang monitor for Swift services on Linux.
//
// Layers point one way:
//   CHangWatchCapture (C, async-signal-safe) <- HangWatch (the embeddable monitor) -> HangWatchReport
//   HangWatchSymbolication -> HangWatchReport;  Tools/ (CLI, agent) -> HangWatchReport (+ symbolication)
// This package is the embeddable library: a service that depends on it resolves swift-log and
// swift-nio (with swift-nio's own dependencies), nothing else. The CLI, the agent, the demos and
// the tests against real servers are a second package, Tools/, that depends on this one by path.
import PackageDescription

let package = Package(
    name: "HangWatch",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HangWatch", targets: ["HangWatch"]),
        .library(name: "HangWatchReport", targets: ["HangWatchReport"]),
        .library(name: "HangWatchSymbolication", targets: ["HangWatchSymbolication"]),
        // SwiftNIO event loops; a separate product so the core never depends on swift-nio.
        .library(name: "HangWatchNIO", targets: ["HangWatchNIO"]),
        // What this repository's test targets share (Tools/ too): running built executables,
        // report directories and fixtures. Not an API.
        .library(name: "HangWatchTestSupport", targets: ["HangWatchTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // `make docs` (the API reference, with DocC). A command plugin no product uses: a service
        // that depends on HangWatch never resolves it (scripts/check-consumer counts).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
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
        // Benchmarks: baselines (bare observers, the naive design) live here, not in the product.
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
            dependencies: [
                "HangWatch", "HangWatchSymbolication", "CStackCorpus",
                // Cases on a real event loop (a channel handler, a Vapor-style route closure).
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // Each chain function stays itself in a release build (not merged with its look-alikes).
            swiftSettings: [.unsafeFlags(["-Xfrontend", "-disable-llvm-merge-functions-pass"])]
        ),
        // C callers for the corpus, built as C libraries are (optimised, no frame pointer).
        .target(
            name: "CStackCorpus",
            cSettings: [.unsafeFlags(["-O2", "-fomit-frame-pointer"])]
        ),
        // A service whose main thread waits on an object another thread or process holds, one kind
        // a run, for the tests of `waitsFor` (built in release by `make test`; not a product).
        .executableTarget(
            name: "hangwatch-waits",
            dependencies: ["HangWatch"]
        ),
        // A service that misbehaves on request, run by the fault-injection tests (not a product).
        .executableTarget(
            name: "hangwatch-faults",
            dependencies: ["HangWatch", "HangWatchReport"]
        ),
        // What the test targets share: the watchdog's fakes (a scripted clock, sampler and
        // environment; package access), and, public for Tools/'s tests too, running built
        // executables, report directories and fixtures.
        .target(
            name: "HangWatchTestSupport",
            dependencies: ["HangWatch", "HangWatchReport", "HangWatchSymbolication", .product(name: "Logging", package: "swift-log")],
            path: "Tests/HangWatchTestSupport"
        ),

        // Tests, by kind (the Makefile picks a phase by the target's name): `…Tests` are pure or
        // run on scripted time, side by side; `…RealTimeTests` need real threads, signals, loops
        // and child processes keeping time, one test at a time.
        .testTarget(
            name: "HangWatchTests",
            dependencies: [
                "HangWatch", "HangWatchReport", "HangWatchTestSupport", "CEpoll",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Machine code of known shapes for the blocked-thread walk's tests (x86_64 assembly).
        .target(name: "CStackShapes", path: "Tests/CStackShapes"),
        .testTarget(
            name: "HangWatchRealTimeTests",
            dependencies: [
                "HangWatch", "HangWatchReport", "HangWatchSymbolication", "HangWatchTestSupport", "CStackShapes",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HangWatchNIORealTimeTests",
            dependencies: [
                "HangWatchNIO", "HangWatch", "HangWatchReport", "HangWatchSymbolication", "HangWatchTestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "HangWatchReportTests",
            dependencies: ["HangWatchReport", "HangWatchTestSupport"]
        ),
        .testTarget(
            name: "HangWatchSymbolicationTests",
            dependencies: ["HangWatchSymbolication", "HangWatchReport"]
        ),
    ]
)
