import Foundation
import HangWatchReport
import HangWatchSymbolication
import HangWatchTestSupport
import Testing

/// The differential test of stack capture (Sources/hangwatch-stackcorpus): a program blocks its
/// main thread in each kind of system call under a known call chain, and each blocked-thread stack
/// (taken without a signal, as the watchdog takes it) is compared with the thread's own stack taken
/// in the same state by the signal handler; CPU-bound cases (a hot loop that reads the clock, so
/// samples land in the vDSO) must reach the outermost frame with the chain in order. Every frame
/// must match, or the stack must be a marked-truncated prefix.
///
/// Run against the debug build (built with the tests) and the release build (`make test` builds
/// it; built here when missing).
@Suite(.serialized) struct StackCorpusTests {
    struct Result: Decodable {
        struct Case: Decodable {
            var name: String
            var exact: Int
            var truncated: Int
            var wrong: Int
            var discarded: Int
            var inVDSO: Int
            var error: String?
        }
        var build: String
        var cases: [Case]
    }

    static let samples = 20

    func run(_ executable: String, _ arguments: [String] = []) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--samples", "\(Self.samples)", "--json"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try JSONDecoder().decode(Result.self, from: data)
    }

    /// The release build of the corpus: `make test` builds it (`BuiltExecutable.releasePath`); when
    /// it is missing (`swift test` alone), it is built here, where `make test` would.
    static func releaseCorpus() throws -> String {
        let release = BuiltExecutable.releasePath("hangwatch-stackcorpus")
        if FileManager.default.isExecutableFile(atPath: release) { return release }
        let debug = URL(fileURLWithPath: BuiltExecutable.path("hangwatch-stackcorpus"))
        let root = debug.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let build = Process()
        build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        build.arguments = [
            "swift", "build", "-c", "release", "--product", "hangwatch-stackcorpus", "--package-path", root.path,
            "--scratch-path", root.appendingPathComponent(BuiltExecutable.releaseScratch).path,
        ]
        try build.run()
        build.waitUntilExit()
        let built = BuiltExecutable.releasePath("hangwatch-stackcorpus")
        try #require(FileManager.default.isExecutableFile(atPath: built), "the release corpus could not be built")
        return built
    }

    func check(_ result: Result, allowTruncation: Bool) {
        #expect(result.cases.count >= 20, "\(result.cases.map(\.name))")
        for item in result.cases {
            #expect(item.error == nil, "\(result.build) \(item.name): \(item.error ?? "")")
            #expect(item.wrong == 0, "\(result.build) \(item.name): \(item.wrong) of \(Self.samples) stacks wrong")
            #expect(item.exact + item.truncated + item.wrong == Self.samples, "\(result.build) \(item.name): \(item)")
            if !allowTruncation {
                #expect(item.truncated * 20 <= Self.samples, "\(result.build) \(item.name): \(item.truncated) of \(Self.samples) truncated")
            }
        }
        // The clock-reading case tests the vDSO only if samples landed there.
        let clock = result.cases.first { $0.name == "cpu-reading-the-clock" }
        #expect((clock?.inVDSO ?? 0) > 0, "no sample landed in the vDSO")
    }

    @Test func everyBlockedStackOfTheDebugBuildIsExactOrAMarkedPrefix() throws {
        let result = try run(BuiltExecutable.path("hangwatch-stackcorpus"))
        #expect(result.build == "debug")
        check(result, allowTruncation: false)
    }

    @Test func everyBlockedStackOfTheReleaseBuildIsExactOrAMarkedPrefix() throws {
        let result = try run(try Self.releaseCorpus())
        #expect(result.build == "release")
        check(result, allowTruncation: false)
    }

    /// Without the prologue method, every stack rests on the frame-record search alone: it may stop
    /// more often (an indirect call proves nothing), but it never invents a frame.
    @Test func theFrameRecordSearchAloneNeverInventsAFrame() throws {
        for executable in [BuiltExecutable.path("hangwatch-stackcorpus"), try Self.releaseCorpus()] {
            check(try run(executable, ["--no-prologue"]), allowTruncation: true)
        }
    }

    // MARK: the same call sites as hangs of a monitored service

    struct ServiceRun: Decodable {
        var hangs: [String]
        var chains: [String: [String]]
        var interruptions: Int
    }

    func runService(_ arguments: [String]) throws -> (ServiceRun, [HangReport]) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hangwatch-service-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.releaseCorpus())
        process.arguments = ["service", "--reports", directory] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        let run = try JSONDecoder().decode(ServiceRun.self, from: data)
        let symbolicator = Symbolicator()
        let reports = try ReportStore(directory: directory).list().map { file -> HangReport in
            var report = try ReportReader().read(path: file.path)
            symbolicator.symbolicate(&report)
            return report
        }
        return (run, reports)
    }

    /// Whether `name` holds `word` not preceded by a letter or digit (`pollInner` is not in `epollInner`).
    static func mentions(_ name: String, _ word: String) -> Bool {
        var searched = name[...]
        while let range = searched.range(of: word) {
            if range.lowerBound == name.startIndex || !name[name.index(before: range.lowerBound)].isLetter
                && !name[name.index(before: range.lowerBound)].isNumber
            {
                return true
            }
            searched = searched[range.upperBound...]
        }
        return false
    }

    /// Whether `names` (innermost first) hold `chain` in order, then the run loop, then `main`.
    static func namesCulpritAndCallers(_ names: [String], chain: [String]) -> Bool {
        var position = names.startIndex
        for link in chain + ["CFRunLoopRun", "main"] {
            guard let found = names[position...].firstIndex(where: { mentions($0, link) }) else { return false }
            position = found + 1
        }
        return true
    }

    /// The issue's service: hangs at the corpus's 30 main-thread sites (computing, a lock, pipe and
    /// socket reads, poll, select, epoll, sleeps, a condition, semaphores with and without a timeout,
    /// accept, a child, a file lock, sigtimedwait, a nested run loop, main-queue and performed
    /// blocks, one-line usleep wrappers, DispatchQueue.sync, C callers, generics, closures, chains of
    /// two to five functions), release build, default repeat window and rate limit, 100 ms threshold
    /// and 250 ms hangs: every hang reported (no two sites folded into one), the culprit and its real
    /// callers in order up to the run loop and main in at least 95 % of them, and no blocking call
    /// cut short.
    @Test func aServiceHangingAtThirtySitesGetsAReportPerSiteNamingItsCallers() throws {
        let (run, reports) = try runService(["--threshold-ms", "100", "--hang-ms", "250"])
        #expect(run.interruptions == 0)
        #expect(run.hangs.count >= 30)
        #expect(reports.count == run.hangs.count, "\(reports.count) reports for \(run.hangs.count) hangs")
        #expect(Set(reports.map(\.signature)).count == reports.count)
        var named = 0
        for site in run.hangs {
            let chain = try #require(run.chains[site])
            let matching = reports.filter { report in
                (report.heaviestStack?.frames.compactMap(\.symbol) ?? []).contains { Self.mentions($0, chain[0]) }
            }
            #expect(matching.count == 1, "\(site): \(matching.count) reports")
            guard let report = matching.first, let heaviest = report.heaviestStack else { continue }
            let complete = report.stack(at: heaviest.stack).map { !$0.truncated } ?? false
            if complete && Self.namesCulpritAndCallers(heaviest.frames.map { $0.symbol ?? "?" }, chain: chain) {
                named += 1
            } else {
                Issue.record("\(site): \(heaviest.frames.map { $0.symbol ?? $0.address }.joined(separator: " < "))")
            }
        }
        #expect(named * 100 >= run.hangs.count * 95, "\(named) of \(run.hangs.count) name their culprit and its callers")
        // The 600 ms hot loop that reads the clock names its function.
        let clock = reports.first { $0.heaviestStack?.frames.contains { Self.mentions($0.symbol ?? "", "clockSpinInner") } == true }
        #expect(clock != nil)
    }

    /// 40 hangs at 4 sites within a minute, shuffled, default rate limit and repeat window: one
    /// report per site, every other hang counted in it; none lost.
    ///
    /// On a machine that keeps the service off its CPUs, a hang the thread spent waiting for one
    /// can end with no stack at all (the capture signal is answered only once it runs): such a
    /// report says `starved`; and a hang that ended before a watchdog kept off its CPU ran at all
    /// is reported from the loop's own edges, with no stack, saying so (`ended before the watchdog
    /// ran`). Those are the only kinds allowed beside the four.
    @Test func fortyHangsAtFourSitesGiveAReportPerSite() throws {
        let (run, reports) = try runService([
            "--rounds", "10", "--cases", "read-pipe,poll,cpu-computing,futex-mutex", "--threshold-ms", "100", "--hang-ms", "160",
        ])
        #expect(run.hangs.count == 40)
        #expect(run.interruptions == 0)
        let repeats = reports.reduce(0) { $0 + ($1.repeats?.count ?? 0) }
        // Every hang is reported or counted, on any machine: a lost hang is the product's failure,
        // a busy machine no excuse. The message says whether the reports saw starvation.
        let starvedService = reports.contains { $0.context.verdict == .starved || $0.context.watchdogOversleepMs > 20 }
        #expect(
            reports.count + repeats == 40,
            "\(reports.count) reports and \(repeats) repeats: every hang is one or the other (a report says starved or a late watchdog: \(starvedService))")
        let withStacks = reports.filter { $0.heaviestStack != nil }
        let starved = reports.filter { report in
            report.heaviestStack == nil
                && (report.context.verdict == .starved || report.capture.errors.contains { $0.kind == "ended before the watchdog ran" })
        }
        #expect(withStacks.count == 4, "\(reports.map { $0.heaviestStack?.frames.first?.symbol ?? "none: \($0.context.verdict)" })")
        #expect(withStacks.count + starved.count == reports.count, "a report without a stack that says neither starved nor seen late")
        for site in ["blockingPipeRead", "pollInner", "computeInner", "mutexInner"] {
            #expect(withStacks.filter { $0.heaviestStack?.frames.contains { Self.mentions($0.symbol ?? "", site) } == true }.count == 1, "\(site)")
        }
    }
}
