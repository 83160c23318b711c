import Foundation
import HangWatch
import HangWatchReport

/// An `async` `@main` service whose MainActor work hangs once: what a modern Swift service looks
/// like with no run loop at all. HangWatch watches its main queue by pinging it.
///
///   hangwatch-async-demo --reports DIR [--steady N]
///
/// `--steady N`: then N more MainActor computations of 400 ms, a second and a half apart, once the
/// service has settled (every hang its own report: no fold of repeats), each one's measured and
/// reported durations printed (docs/performance.md's MainActor figure).
///
/// Exits 0 when exactly two reports (2 + N with `--steady`) were written, 1 otherwise.
@main
struct AsyncDemo {
    @MainActor static var requestsServed = 0
    /// How long each hang took, measured by the code that hangs (printed; the tests compare).
    @MainActor static var measured: [(name: String, milliseconds: Double, startedAt: Date)] = []

    /// `wall`: when the hang began on the wall clock (a report's start is compared with it).
    @MainActor static func record(_ name: String, since start: UInt64, wall: Date) {
        measured.append((name, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6, wall))
    }

    @inline(never)
    @MainActor static func rebuildSearchIndex(milliseconds: Int) {
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
        var value: UInt64 = 1
        while DispatchTime.now().uptimeNanoseconds < end { value = value &* 31 &+ 7 }
        if value == 42 { print("") }
    }

    // A request handled in async steps, the last one too long for the MainActor: the report names
    // the spinning function and, through the async context chain, the async callers that led to it.
    @inline(never)
    @MainActor static func handleRequest(id: Int) async -> Int {
        await Task.yield()
        return await loadProfile(id: id) + 1
    }

    @inline(never)
    @MainActor static func loadProfile(id: Int) async -> Int {
        await Task.yield()
        return await computeScore(id: id) * 2
    }

    @inline(never)
    @MainActor static func computeScore(id: Int) async -> Int {
        await Task.yield()
        let wall = Date()
        let start = DispatchTime.now().uptimeNanoseconds
        rebuildSearchIndex(milliseconds: 800)
        record("rebuildSearchIndex", since: start, wall: wall)
        return id
    }

    // The same in a blocking call: the thread sleeps in the kernel, its stack is read from outside.
    @inline(never)
    @MainActor static func handleUpload(size: Int) async -> Int {
        await Task.yield()
        return await storeBlob(size: size)
    }

    @inline(never)
    @MainActor static func storeBlob(size: Int) async -> Int {
        await Task.yield()
        let wall = Date()
        let start = DispatchTime.now().uptimeNanoseconds
        usleep(700_000)
        record("storeBlob", since: start, wall: wall)
        return size
    }

    static func main() async throws {
        let arguments = CommandLine.arguments
        guard let flag = arguments.firstIndex(of: "--reports"), flag + 1 < arguments.count else {
            FileHandle.standardError.write(Data("usage: hangwatch-async-demo --reports DIR\n".utf8))
            exit(2)
        }
        let directory = arguments[flag + 1]
        let steadyFlag = arguments.firstIndex(of: "--steady")
        let steady = steadyFlag.map { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) ?? -1 : -1 } ?? 0
        guard (0...1000).contains(steady) else {
            FileHandle.standardError.write(Data("hangwatch-async-demo: --steady takes 0 ... 1000\n".utf8))
            exit(2)
        }
        var configuration = HangMonitor.Configuration(serviceName: "async-demo", threshold: .milliseconds(250), reportDirectory: directory)
        if steady > 0 {
            // Every hang its own report: no fold of repeats, no rate limit in reach.
            configuration.repeatWindow = .zero
            configuration.reportsPerMinute = 10_000
            configuration.reportBurst = 10_000
        }
        let monitor = try HangMonitor(configuration: configuration)
        try monitor.startWatchingMainQueue()
        print("HangWatch async demo: watching the main queue (MainActor), threshold 250 ms")
        // Quick MainActor work: not hangs.
        for _ in 0..<20 {
            try await Task.sleep(nanoseconds: 20_000_000)
            await MainActor.run { requestsServed += 1 }
        }
        print("  MainActor work that takes 800 ms: handleRequest -> loadProfile -> computeScore (async)")
        _ = await handleRequest(id: 7)
        try await Task.sleep(nanoseconds: 600_000_000)
        print("  MainActor blocked 700 ms: handleUpload -> storeBlob (async) -> usleep")
        _ = await handleUpload(size: 1)
        try await Task.sleep(nanoseconds: 1_000_000_000)
        for _ in 0..<steady {
            try await Task.sleep(nanoseconds: 1_500_000_000)
            await MainActor.run {
                let wall = Date()
                let start = DispatchTime.now().uptimeNanoseconds
                rebuildSearchIndex(milliseconds: 400)
                record("steady", since: start, wall: wall)
            }
        }
        if steady > 0 { try await Task.sleep(nanoseconds: 1_000_000_000) }
        monitor.stop()
        let reports = (try? ReportStore(directory: directory).list()) ?? []
        for (name, milliseconds, _) in measured {
            print("  measured: \(name) \(String(format: "%.1f", milliseconds)) ms")
        }
        for file in reports {
            guard let data = FileManager.default.contents(atPath: file.path), let report = try? HangReport.decode(data) else { continue }
            // Where a difference is: the report's start before the hang's, its end after it.
            let hang = measured.min { abs($0.startedAt.timeIntervalSince(report.startedAt)) < abs($1.startedAt.timeIntervalSince(report.startedAt)) }
            let split = hang.map { hang -> String in
                let early = hang.startedAt.timeIntervalSince(report.startedAt) * 1000
                return String(format: ", %@: start %.1f ms early, end %.1f ms late", hang.name, early, report.durationMs - hang.milliseconds - early)
            } ?? ""
            print("  reported: \(report.durationMs) ms, edges \(report.edges ?? "-"), detected \(Int(report.detectedAt.timeIntervalSince(report.startedAt) * 1000)) ms in\(split)")
        }
        print("\(reports.count) hang report(s) in \(directory) (expected \(2 + steady))")
        exit(reports.count == 2 + steady ? 0 : 1)
    }
}
