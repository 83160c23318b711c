import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// Runs the real demo binary: a service on RunLoop.main that hangs in a timer, a main-queue block,
/// a lock wait, a nested run in a custom mode and a sleep. Every hang must be reported once, with
/// the function that hung in its heaviest stack.
@Suite(.serialized) struct DemoEndToEndTests {
    /// Runs `binary` with `arguments` to the end: its exit status and everything it printed.
    static func run(_ binary: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    static var demoBinary: String { BuiltExecutable.path("hangwatch-demo") }

    /// The same service under `dispatchMain()` (as an `async` @main service runs): no run loop, the
    /// main queue drained by a libdispatch worker. The ping finds the stall and captures that worker.
    @Test func aMainQueueServiceUnderDispatchMainGetsItsHangReported() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.demoBinary), "build the demo first: swift build")
        let directory = ReportDirectory()
        let (status, text) = try Self.run(Self.demoBinary, ["--reports", directory.path, "--main-queue"])
        #expect(status == 0, "\(text)")
        let reports = directory.reports()
        #expect(reports.count == 1, "\(text)")
        let report = try #require(reports.first)
        #expect(report.source == "dispatch-main")
        #expect(report.heaviestStackContains("recomputePricing"), "\(report.heaviestSymbols)")
        // A lower bound: seen from the first ping after the 800 ms block began.
        #expect(report.durationMs >= 250 && report.durationMs <= 900, "\(report.durationMs)")
        // Computing; or waiting for a CPU the tests beside it hold (these run side by side).
        #expect(report.context.verdict == .computing || report.context.verdict == .starved, "\(String(describing: report.context.verdict))")
    }

    /// An `async` @main service: MainActor work that takes 800 ms is reported with its function.
    @Test func anAsyncMainServiceGetsItsMainActorHangReported() throws {
        let binary = BuiltExecutable.path("hangwatch-async-demo")
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build it first: swift build")
        let directory = ReportDirectory()
        let (status, text) = try Self.run(binary, ["--reports", directory.path])
        #expect(status == 0, "\(text)")
        let reports = directory.reports()
        // A hang on a libdispatch worker that no ping ever ran on cannot be captured by signal (the
        // worker blocks every signal until a ping unblocks the capture signal there): such a report
        // says so, and it is a failure of this test, not a case it forgives.
        let unprepared = reports.filter { $0.capture.errors.contains { $0.kind == "work on an unprepared thread" } }
        #expect(unprepared.isEmpty, "hangs on a main-queue worker no ping had prepared: \(unprepared.map(\.id))")
        let report = try #require(reports.first { $0.heaviestStackContains("rebuildSearchIndex") }, "\(text)")
        #expect(report.source == "dispatch-main")
        #expect(report.heaviestStackContains("rebuildSearchIndex"), "\(report.heaviestSymbols)")
        // Computing; or waiting for a CPU the tests beside it hold (these run side by side).
        #expect(report.context.verdict == .computing || report.context.verdict == .starved, "\(String(describing: report.context.verdict))")
        // The async callers, from the async context chain, in call order after the running function.
        let frames = try #require(report.heaviestStack?.frames)
        let names = frames.map { $0.symbol ?? $0.address }
        let spin = try #require(names.firstIndex { $0.contains("rebuildSearchIndex") }, "\(names)")
        let running = try #require(names.firstIndex { $0.contains("computeScore") }, "\(names)")
        let profile = try #require(names.firstIndex { $0.contains("loadProfile") }, "\(names)")
        let request = try #require(names.firstIndex { $0.contains("handleRequest") }, "\(names)")
        #expect(spin < running && running < profile && profile < request, "\(names)")
        #expect(frames[running].async == nil, "the running function is on the thread's stack")
        #expect(frames[profile].async == true && frames[request].async == true, "\(frames)")
        let stack = try #require(report.heaviestStack.flatMap { report.stack(at: $0.stack) })
        #expect(stack.asyncCallers == "complete", "\(String(describing: stack.asyncCallers))")
        // Every async caller is a partial function's entry: offset 0 from its function's start.
        for frame in frames where frame.async == true {
            #expect(frame.offset == frame.functionOffset, "\(frame)")
        }

        // Blocked in the kernel (read from outside, no signal): the same chain.
        let blocked = try #require(reports.first { $0.heaviestStackContains("usleep") }, "\(reports.map(\.heaviestSymbols))")
        let blockedNames = blocked.heaviestSymbols
        let store = try #require(blockedNames.firstIndex { $0.contains("storeBlob") }, "\(blockedNames)")
        let upload = try #require(blockedNames.firstIndex { $0.contains("handleUpload") }, "\(blockedNames)")
        #expect(store < upload && blocked.heaviestStack?.frames[upload].async == true, "\(blockedNames)")
        #expect(blocked.samples.contains { $0.method == "syscall" }, "\(blocked.samples)")

        // Dated by the looks at the thread that drains the main queue: each duration within 5 % of
        // what the demo measured around the hanging call, detected a threshold (250 ms) after the
        // start plus at most two sample intervals (50 ms).
        for (hang, name) in [(report, "rebuildSearchIndex"), (blocked, "storeBlob")] {
            let line = try #require(text.split(separator: "\n").first { $0.contains("measured: \(name) ") }, "\(text)")
            let measured = try #require(line.split(separator: " ").dropLast().last.flatMap { Double($0) }, "\(line)")
            #expect(hang.edges == "sampled", "\(name): \(String(describing: hang.edges))")
            #expect(abs(Double(hang.durationMs) - measured) <= 0.05 * measured, "\(name): reported \(hang.durationMs) ms, measured \(measured) ms")
            let detection = hang.detectedAt.timeIntervalSince(hang.startedAt) * 1000
            #expect(detection >= 245 && detection <= 250 + 2 * 50 + 5, "\(name): detected \(detection) ms after the start")
        }
    }


    /// The demo deletes nothing it did not create: in someone else's directory every file stays;
    /// in its own, only its earlier runs' reports go.
    @Test func theDemoKeepsWhatItDidNotCreate() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.demoBinary), "build the demo first: swift build")
        let foreign = ReportDirectory()
        let store = ReportStore(directory: foreign.path)
        try store.prepare()
        let billing = try store.write(ReportFixtures.report())
        try Data("keep me\n".utf8).write(to: URL(fileURLWithPath: foreign.path + "/notes.txt"))
        let (status, text) = try Self.run(Self.demoBinary, ["--reports", foreign.path, "--main-queue"])
        #expect(status == 0, "\(text)")
        #expect(text.contains("was not made by the demo; everything in it is kept"), "\(text)")
        #expect(text.contains("1 hang reports written (expected 1)"), "\(text)")
        #expect(FileManager.default.fileExists(atPath: billing))
        #expect(FileManager.default.contents(atPath: foreign.path + "/notes.txt") == Data("keep me\n".utf8))
        #expect(foreign.reports().count == 2)

        let own = ReportDirectory()
        #expect(try Self.run(Self.demoBinary, ["--reports", own.path, "--main-queue"]).status == 0)
        let first = try #require(own.reports().first)
        try Data("keep me\n".utf8).write(to: URL(fileURLWithPath: own.path + "/notes.txt"))
        let again = try Self.run(Self.demoBinary, ["--reports", own.path, "--main-queue"])
        #expect(again.status == 0, "\(again.output)")
        let reports = own.reports()
        #expect(reports.count == 1 && reports.first?.id != first.id, "\(reports.map(\.id))")
        #expect(FileManager.default.fileExists(atPath: own.path + "/notes.txt"))
    }

    /// A one-letter relative report directory (Foundation's path code traps on it) works.
    @Test func aOneLetterRelativeReportDirectoryWorks() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.demoBinary), "build the demo first: swift build")
        let workingDirectory = ReportDirectory()
        try FileManager.default.createDirectory(atPath: workingDirectory.path, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.demoBinary)
        process.arguments = ["--reports", "r", "--main-queue"]
        process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory.path)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text.suffix(2000))")
        #expect(ReportDirectory(path: workingDirectory.path + "/r").reports().count == 1)
    }
}

/// The demo's shared run (`DemoReports`), made by this suite in the tests that run one at a time,
/// so that its verdicts are not skewed by tests running beside it; the other test processes of a
/// `make test` reuse it.
@Suite(.serialized) struct DemoRunTests {
    /// The demo run every test of this `make test` shares.
    @Test func theDemoReportsEveryHangWithItsCulprit() throws {
        let run = try DemoReports.run.get()
        let text = run.result.output + run.result.errors
        let reports = ReportDirectory(path: run.directory).reports()
        #expect(reports.count == 5)
        let expectations: [(function: String, verdict: HangReport.Verdict?)] = [
            ("recomputePricing", nil), ("parseInventorySnapshot", nil), ("waitForCacheLock", .blocked),
            ("renderModalFrame", nil), ("flushAuditLogSynchronously", .blocked),
        ]
        for expectation in expectations {
            let match = reports.first { $0.heaviestStackContains(expectation.function) }
            #expect(match != nil, "no report names \(expectation.function): \(reports.map(\.heaviestSymbols))")
            if let verdict = expectation.verdict {
                #expect(match?.context.verdict == verdict)
            }
        }
        #expect(reports.contains { $0.mode == "DemoModalMode" })
        // Two hangs in a request's labels (the README's label examples read them).
        let labels = Dictionary(reports.compactMap { report in report.labels.map { (report.heaviestSymbols.joined(separator: " "), $0) } }) { $1 }
        #expect(labels.count == 2, "\(labels)")
        #expect(labels.first { $0.key.contains("waitForCacheLock") }?.value == ["route": "GET /cart", "tenant": "acme"], "\(labels)")
        #expect(labels.first { $0.key.contains("flushAuditLogSynchronously") }?.value == ["route": "GET /checkout", "tenant": "acme"], "\(labels)")
        // The printed summary names the functions, demangled.
        #expect(text.contains("hangwatch_demo.DemoService.recomputePricing("))
        #expect(text.contains("5 hang reports written (expected 5)"))
    }
}
