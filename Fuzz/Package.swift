// swift-tools-version: 6.1
//
// The report parser's fuzz target, kept out of the main package so that `swift build` and
// `swift test` there never need the sanitizers. Build and run it with `Fuzz/run` (libFuzzer:
// `-sanitize=fuzzer,address`).
import Foundation
import PackageDescription

// A path dependency is identified by its directory's name, which is whatever the checkout is called.
// The report schema is the library's; the exporters are the tools' (Tools/, a package of its own).
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let rootIdentity = root.lastPathComponent

let package = Package(
    name: "HangWatchFuzz",
    dependencies: [
        .package(path: ".."),
        .package(path: "../Tools"),
    ],
    targets: [
        .executableTarget(
            name: "ReportParserFuzz",
            dependencies: [
                .product(name: "HangWatchReport", package: rootIdentity),
                .product(name: "HangWatchReading", package: "Tools"),
                .product(name: "HangWatchProfiles", package: "Tools"),
            ]
        ),
    ]
)
