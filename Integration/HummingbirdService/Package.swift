// swift-tools-version: 6.2
//
// HangWatch in a real Hummingbird 2 server, tested under wrk (make test) and measured (make bench).
// A package of its own so that neither HangWatch nor a service that embeds it resolves Hummingbird.
import PackageDescription

let package = Package(
    name: "HangWatchHummingbird",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "HangWatch", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        .executableTarget(
            name: "hangwatch-hummingbird-service",
            dependencies: [
                .product(name: "HangWatch", package: "HangWatch"),
                .product(name: "HangWatchNIO", package: "HangWatch"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        .executableTarget(name: "hangwatch-hummingbird-bench"),
        .testTarget(
            name: "HummingbirdServiceTests",
            dependencies: [
                .product(name: "HangWatchReport", package: "HangWatch"),
                .product(name: "HangWatchSymbolication", package: "HangWatch"),
            ]
        ),
    ]
)
