import Foundation
import HangWatchReport

/// Figure 9: `hangwatch list` and `hangwatch top` over 10,000 reports, run as the person on call
/// would (the release binary, output to /dev/null): the first run reads and symbolicates every
/// report and writes the index; later runs read the index and look at the directory.
struct CLIFigure {
    var reportCount: Int
    var runs: Int

    struct Outcome {
        var reportBytes: Int
        var coldList: Double
        var coldListRaw: Double
        var warmList: Double
        var warmTop: Double
        var afterNewReports: Double
        var newReports: Int
    }

    func measure() throws -> Outcome {
        // The CLI is the tools' package's (`make bench` says where); else one built next to the bench.
        let cli = try ToolBinary.path(
            "hangwatch", variable: "HANGWATCH_CLI", build: "swift build -c release --package-path Tools --scratch-path .build --product hangwatch")
        let originals = try RealReports.make(name: "cli")

        // Copies, spread over a week and four services (one directory each, as the agent keeps them).
        let root = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-cli-\(getpid())"
        try? FileManager.default.removeItem(atPath: root)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let services = ["billing", "cart", "search", "gateway"]
        for service in services {
            try FileManager.default.createDirectory(atPath: root + "/reports/" + service, withIntermediateDirectories: true)
        }
        let now = Date()
        var bytes = 0
        func writeCopy(_ index: Int) throws {
            let report = RealReports.copy(
                originals[index % originals.count], service: services[index % services.count],
                at: now.addingTimeInterval(-Double(index) * 60), index: index)
            let data = try report.encoded()
            bytes += data.count
            // Setup, not measured: written without the store's fsync.
            try data.write(to: URL(fileURLWithPath: root + "/reports/" + report.service + "/" + ReportStore.fileName(forID: report.id)))
        }
        for index in 0..<reportCount { try writeCopy(index) }

        func run(_ arguments: [String], cache: String) throws -> Double {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: cli)
            process.arguments = arguments + ["--dir", root + "/reports"]
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CACHE_HOME"] = cache
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            let start = Statistics.monotonicSeconds()
            try process.run()
            process.waitUntilExit()
            let elapsed = Statistics.monotonicSeconds() - start
            guard process.terminationStatus == 0 else { throw BenchFailure("hangwatch \(arguments) exited \(process.terminationStatus)") }
            return elapsed
        }

        let cache = root + "/cache"
        var coldList: [Double] = []
        var coldRaw: [Double] = []
        for _ in 0..<max(1, runs / 2) {
            try? FileManager.default.removeItem(atPath: cache)
            coldRaw.append(try run(["list", "--no-symbolicate"], cache: cache))
            try? FileManager.default.removeItem(atPath: cache)
            coldList.append(try run(["list"], cache: cache))
        }
        var warmList: [Double] = []
        var warmTop: [Double] = []
        for _ in 0..<runs {
            warmList.append(try run(["list"], cache: cache))
            warmTop.append(try run(["top"], cache: cache))
        }
        // A hundred new reports since the last look: only they are read.
        let added = 100
        for index in reportCount..<(reportCount + added) { try writeCopy(index) }
        let incremental = try run(["list"], cache: cache)
        return Outcome(
            reportBytes: bytes / (reportCount + added), coldList: Statistics.median(coldList), coldListRaw: Statistics.median(coldRaw),
            warmList: Statistics.median(warmList), warmTop: Statistics.median(warmTop), afterNewReports: incremental, newReports: added)
    }
}

/// Why a figure could not run (a tool missing, a set-up that failed).
struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
