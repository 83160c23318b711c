import Foundation
@testable import HangWatch
import HangWatchReport
import Synchronization
import HangWatchTestSupport
import Testing

/// A serial dispatch queue watched by pinging it, end to end. (The ping's rules are `QueuePingTests`.)
@Suite(.serialized) struct QueueSourceTests {
    @Test func aBlockThatStallsTheQueueIsReportedOnceWithTheCulprit() throws {
        let directory = ReportDirectory()
        let monitor = try HangMonitor(configuration: directory.configuration(threshold: .milliseconds(200)))
        defer { monitor.stop() }
        let queue = DispatchQueue(label: "orders")
        try monitor.start(queue: queue)
        let blockThread = Mutex<String>("")
        let took = Mutex<Double>(0)
        queue.async {
            blockThread.withLock { $0 = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "" }
            let start = DispatchTime.now().uptimeNanoseconds
            _ = hangInQueuedBlock(milliseconds: 900)
            took.withLock { $0 = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }
        }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        #expect(directory.reports().count == 1)
        let report = try #require(reports.first)
        #expect(report.source == "dispatch-queue")
        #expect(report.activity == "queued")
        // Dated by the looks (`sampled`), or from the first ping the stall kept waiting (`ping`):
        // then a lower bound, at most a threshold and a sample interval short of the block.
        let measured = took.withLock { $0 }
        try #require(measured >= 900, "the block measured \(measured) ms")
        #expect(
            report.durationMs >= measured - 250 && report.durationMs <= measured + 100,
            "reported \(report.durationMs) ms (edges \(report.edges ?? "-")) for a block of \(measured) ms")
        // The thread captured is the one running the block, found by its current-queue word
        // among the workers that ran a ping, or, on a worker no ping ran on, by that worker's
        // thread descriptor (and prepared for the capture then): never another worker.
        let ranOn = blockThread.withLock { $0 }.split(separator: "/").last.flatMap { Int32($0) }
        #expect(ranOn == report.thread.tid, "\(report.capture.errors)")
        #expect(report.heaviestStackContains("hangInQueuedBlock"), "\(report.heaviestSymbols)")
    }

    /// A block libdispatch starts on a worker no ping ever ran on (every worker the pings knew is
    /// busy elsewhere, so it makes a new one) is captured on that worker: found by its thread
    /// descriptor, prepared for captures by the signal its mask lets through (SIGPROF), its stack
    /// taken like any other, its start dated by the worker's own clock.
    @Test func aStallOnAWorkerNoPingRanOnIsCapturedThere() throws {
        let directory = ReportDirectory()
        let monitor = try HangMonitor(configuration: directory.configuration(threshold: .milliseconds(200)))
        defer { monitor.stop() }
        let queue = DispatchQueue(label: "invoices")
        try monitor.start(queue: queue)
        #expect(Eventually.holds(timeout: 10) { monitor.sourceEdges == "sampled" }, "the looks never saw the queue's state")
        // Past the first pings, which come an interval apart: then one per threshold.
        usleep(2_500_000)
        // Every worker there is now (those that ran pings among them) kept busy asleep elsewhere,
        // the block enqueued right behind them: libdispatch starts a new worker for it.
        let before = Set(ProcessThreadList.current())
        let sleepers = (0..<24).map { DispatchQueue(label: "sleeper-\($0)") }
        let asleep = DispatchGroup()
        for sleeper in sleepers { sleeper.async(group: asleep) { usleep(1_500_000) } }
        let ranOn = Mutex<(tid: Int32, milliseconds: Double, sinceEnqueued: Double)>((0, 0, 0))
        let enqueued = DispatchTime.now().uptimeNanoseconds
        queue.async {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = hangInQueuedBlock(milliseconds: 600)
            let end = DispatchTime.now().uptimeNanoseconds
            ranOn.withLock { $0 = (UnsafeCaptureBridge.currentThreadID(), Double(end - start) / 1e6, Double(end - enqueued) / 1e6) }
        }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        asleep.wait()
        let (tid, took, sinceEnqueued) = ranOn.withLock { $0 }
        // What holds whichever worker ran the block is checked first; only the claim that it was a
        // worker no ping ran on needs libdispatch to have made a new one (the control, at the end).
        let report = try #require(reports.first)
        #expect(report.thread.tid == tid, "captured \(report.thread.tid), the block ran on \(tid): \(report.capture.errors)")
        #expect(report.heaviestStackContains("hangInQueuedBlock"), "\(report.heaviestSymbols)")
        #expect(!report.capture.errors.contains { $0.kind == "work on an unprepared thread" || $0.kind == "signal blocked" }, "\(report.capture.errors)")
        // Dated by the looks too: a worker made for the block has computed ever since its start.
        #expect(report.edges == "sampled", "\(String(describing: report.edges))")
        // The worker's clock starts at the worker's start, before the block's first line: the
        // queue was stuck from then on (beside a busy CPU the new worker waits tens of ms for a
        // CPU: 640 ms read for a 600 ms block, 2026-12-01). So the report lies between what the
        // block measured and the time since it was enqueued, each within 5 %.
        #expect(
            Double(report.durationMs) >= 0.95 * took && Double(report.durationMs) <= 1.05 * sinceEnqueued,
            "reported \(report.durationMs) ms for \(took) ms run, \(sinceEnqueued) ms since enqueued")
        if before.contains(tid) { try ControlCheck.cannotRun("the block ran on worker \(tid), which existed before (libdispatch made no new one)") }
    }

    /// A stall is dated by the looks at the workers (`sampled` edges), whichever worker runs it (one
    /// that ran a ping, or one found by its descriptor): a computation within 5 % of what the
    /// block measured, a sleep within half a look interval, both detected a threshold after they
    /// began plus at most two sample intervals, and captured on the thread that ran the block.
    @Test func aStallOnAWatchedDrainingThreadIsDatedWithinAnInterval() throws {
        let directory = ReportDirectory()
        var configuration = directory.configuration(threshold: .milliseconds(200))
        configuration.repeatWindow = .zero
        let monitor = try HangMonitor(configuration: configuration)
        defer { monitor.stop() }
        let queue = DispatchQueue(label: "ledger")
        try monitor.start(queue: queue)
        #expect(Eventually.holds(timeout: 10) { monitor.sourceEdges == "sampled" }, "the looks never saw the queue's state")
        let measured = Mutex<[(tid: Int32, milliseconds: Double)]>([])
        func stall(_ body: @escaping @Sendable () -> Void) {
            queue.async {
                let tid = Int32((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))?
                    .split(separator: "/").last.map(String.init) ?? "") ?? 0
                let start = DispatchTime.now().uptimeNanoseconds
                body()
                let took = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
                measured.withLock { $0.append((tid, took)) }
            }
        }
        stall { _ = hangInQueuedBlock(milliseconds: 600) }
        #expect(directory.waitForFinished(1).count == 1)
        // Idle for a few looks, so that the next stall starts from a known idle thread.
        Thread.sleep(forTimeInterval: 0.3)
        stall { _ = hangInSleep(milliseconds: 600) }
        let reports = directory.waitForFinished(2).sorted { $0.startedAt < $1.startedAt }
        monitor.stop()
        let blocks = measured.withLock { $0 }
        try #require(reports.count == 2 && blocks.count == 2, "\(reports.map(\.durationMs)) \(blocks)")
        for (report, block) in zip(reports, blocks) {
            // Never another thread than the one that ran the block, whichever worker that was.
            try #require(report.thread.tid == block.tid, "captured \(report.thread.tid), the block ran on \(block.tid)")
            #expect(report.edges == "sampled")
            // A computation's start is exact (the thread's clock): 5 %. A sleep's is half-way between
            // two looks: half an interval (25 ms), plus the latch clock's 4 ms steps at each end.
            let computed = report.heaviestStackContains("hangInQueuedBlock")
            #expect(computed || report.heaviestStackContains("hangInSleep"), "\(report.heaviestSymbols)")
            // (Half the widest gap the looks actually left: on a busy machine a look comes late.)
            let gaps = zip(report.samples, report.samples.dropFirst()).map { $1.offsetMs - $0.offsetMs }
            let bound = computed ? 0.05 * block.milliseconds : max(25, (gaps.max() ?? 50) / 2) + 2 * 4
            #expect(abs(Double(report.durationMs) - block.milliseconds) <= bound,
                    "reported \(report.durationMs) ms for \(block.milliseconds) ms")
            let detection = report.detectedAt.timeIntervalSince(report.startedAt) * 1000
            #expect(detection >= 195 && detection <= 200 + 2 * 50 + 5, "detected \(detection) ms after the start")
        }
    }
}
