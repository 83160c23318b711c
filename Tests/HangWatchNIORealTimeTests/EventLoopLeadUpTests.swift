import Foundation
import HangWatch
import HangWatchNIO
import HangWatchReport
import HangWatchTestSupport
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// An event loop's lead-up (`EventLoopLeadUp`): its flight recorder, written from the edges the
/// watcher and the looks learn, gives a hang's report its `before` once the edges have been exact
/// for the whole window (5 s). Threshold 200 ms; one loop.
@Suite(.serialized) struct EventLoopLeadUpTests {
    /// A server whose one loop is watched with exact edges for more than the window.
    func exactServer(_ name: String, ticks: Bool) throws -> WatchedServer {
        let server = try WatchedServer(name, loops: 1, ticks: ticks) {
            $0.threshold = .milliseconds(200)
            $0.repeatWindow = .zero
        }
        let loop = server.group.next()
        #expect(Eventually.holds(timeout: 10) {
            loop.execute {}
            return server.watch.monitors.allSatisfy(\.isAttached) && server.watch.watchesEventLoopsExactly
        })
        return server
    }

    /// Runs `milliseconds` of `lookUpCustomerSynchronously` on `loop` at each of `count` instants
    /// `every` ms apart, from now, without waiting for them.
    func feed(_ loop: any EventLoop, count: Int, milliseconds: Int, everyMilliseconds: Double) {
        let start = clockNanoseconds()
        for index in 0..<count {
            let due = start + UInt64(Double(index) * everyMilliseconds * 1e6)
            let now = clockNanoseconds()
            if due > now { usleep(useconds_t((due - now) / 1000)) }
            loop.execute { lookUpCustomerSynchronously(milliseconds: milliseconds) }
        }
    }

    /// Idle for the window, then one 400 ms block: its lead-up reads idle.
    @Test func aLoopIdleUntilOneBlockReadsIdleBeforeIt() throws {
        let server = try exactServer("lead-up-idle", ticks: false)
        defer { server.close() }
        usleep(5_300_000)
        server.group.next().execute { lookUpCustomerSynchronously(milliseconds: 400) }
        let reports = ReportDirectory(path: server.directory).waitForFinished(1)
        let report = try #require(reports.first)
        #expect(report.source == "nio-eventloop")
        let before = try #require(report.before, "no lead-up: \(report.id)")
        print("event loop idle, then 400 ms: \(before.reading), \(before.buckets.count) buckets")
        #expect(before.busyRatio < 0.05, "\(before.reading)")
        #expect(before.reading.hasPrefix("idle before onset"), "\(before.reading)")
        #expect(report.kind == nil && before.nearMisses == nil)
    }

    /// Busy 150 ms of every 166.7 (90 %) for 6 s, under the threshold, then a 400 ms block: its
    /// lead-up reads the saturation, and only the block is reported. Each stretch reads up to a
    /// look interval (8 ms) long, its end the look's that found the loop in its wait (with the
    /// loop's iterations too: the look after the iteration's end takes it as busy from then, at
    /// the earliest): measured 95 %, with and without the iterations.
    @Test(arguments: [false, true]) func aSaturatedLoopReadsBusyBeforeTheBlock(ticks: Bool) throws {
        let server = try exactServer("lead-up-busy-\(ticks)", ticks: ticks)
        defer { server.close() }
        let loop = server.group.next()
        usleep(5_100_000)
        feed(loop, count: 36, milliseconds: 150, everyMilliseconds: 166.7)
        loop.execute { lookUpCustomerSynchronously(milliseconds: 400) }
        let reports = ReportDirectory(path: server.directory).waitForFinished(1)
        #expect(reports.count == 1, "\(reports.map { "\($0.durationMs) ms" })")
        let report = try #require(reports.max { $0.durationMs < $1.durationMs })
        let before = try #require(report.before, "no lead-up: \(report.id)")
        print("event loop 90 % busy, then 400 ms (ticks \(ticks)): \(before.reading); busy \(before.busyRatio)")
        #expect(before.busyRatio >= 0.8 && before.busyRatio <= 1, "\(before.reading)")
        #expect(before.reading.hasPrefix("busy "), "\(before.reading)")
        let longest = before.buckets.map(\.longestMs).max() ?? 0
        #expect(longest >= 140 && longest < 200, "the longest piece \(longest) ms")
        #expect(report.kind == nil)
    }
}
