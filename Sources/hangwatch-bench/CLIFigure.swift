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
        let cli = ProcessInfo.processInfo.environment["HANGWATCH_CLI"]
            ?? ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")).map { ($0 as NSString).deletingLastPathComponent } ?? ".") + "/hangwatch"
        guard FileManager.default.isExecutableFile(atPath: cli) else {
            throw BenchFailure("no CLI at \(cli): build it (swift build -c release --package-path Tools --product hangwatch) and set HANGWATCH_CLI")
        }

        // Real reports of this binary (raw frames, as the monitor writes them): eight hangs at
        // different depths, so there are several culprits to group.
        let loop = BenchLoop()
        let variant = try HangWatchVariant(threshold: .milliseconds(100), name: "cli")
        defer { variant.removeReports() }
        variant.attach(to: loop)
        let gaps = GapRecorder(thresholdNanoseconds: 1_000_000_000)
        for depth in 20..<28 {
            loop.sync { _ = hangAtDepth(depth, milliseconds: 300, gaps: gaps) }
        }
        variant.detach()
        loop.stop()
        let originals = variant.reports()
        guard originals.count >= 4 else { throw BenchFailure("the monitor wrote \(originals.count) reports, expected 8") }

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
            var report = originals[index % originals.count]
            report.service = services[index % services.count]
            report.startedAt = now.addingTimeInterval(-Double(index) * 60)
            report.id = ReportTimestamp.compact(report.startedAt) + "-\(report.service)-\(1000 + index % 7)-\(index)"
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

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
