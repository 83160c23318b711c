import Foundation
import HangWatch
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
        queue.async {
            blockThread.withLock { $0 = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "" }
            _ = hangInQueuedBlock(milliseconds: 900)
        }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        #expect(directory.reports().count == 1)
        let report = try #require(reports.first)
        #expect(report.source == "dispatch-queue")
        #expect(report.activity == "queued")
        // Seen from the first ping after the stall began: a lower bound of its length.
        #expect(report.durationMs >= 200 && report.durationMs <= 1000, "\(report.durationMs)")
        // The thread captured is the one running the block, found by its current-queue word
        // among the workers that ran a ping. A block libdispatch started on a worker no ping had
        // run on is reported without a stack, saying why, never with another worker's.
        let ranOn = blockThread.withLock { $0 }.split(separator: "/").last.flatMap { Int32($0) }
        if report.thread.tid == 0 {
            #expect(report.capture.errors.contains { $0.kind == "work on an unprepared thread" }, "\(report.capture.errors)")
            #expect(report.heaviestStack == nil)
        } else {
            #expect(ranOn == report.thread.tid)
            #expect(report.heaviestStackContains("hangInQueuedBlock"), "\(report.heaviestSymbols)")
        }
    }

    /// A stall on a worker that ran a ping is dated by the looks at the workers (`sampled` edges):
    /// a computation within 5 % of what the block measured, a sleep within half a look interval,
    /// both detected a threshold after they began plus at most two sample intervals, and captured
    /// on the thread that ran the block. One on a worker no ping has run on has no stack, and says
    /// why, rather than an idle worker's.
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
            if report.thread.tid == 0 {
                // libdispatch started the block on a worker no ping had run on: no stack rather than
                // an idle worker's, and the report says why; the ping alone dated it.
                #expect(report.capture.errors.contains { $0.kind == "work on an unprepared thread" }, "\(report.capture.errors)")
                #expect(report.heaviestStack == nil && report.edges == "ping")
                continue
            }
            // Never another thread than the one that ran the block.
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
