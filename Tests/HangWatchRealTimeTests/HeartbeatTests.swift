import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Synchronization
import Testing

/// The heartbeat file a running monitor keeps for the host agent.
@Suite(.serialized) struct HeartbeatTests {
    func heartbeat(_ directory: ReportDirectory) throws -> MonitorHeartbeat {
        try MonitorHeartbeat.read(path: directory.path + "/" + MonitorHeartbeat.fileName(pid: getpid()))
    }

    /// Polls until `condition` holds for the heartbeat (or 10 s pass).
    func waitFor(_ directory: ReportDirectory, _ condition: (MonitorHeartbeat) -> Bool) -> MonitorHeartbeat? {
        Eventually.value({ try? heartbeat(directory) }, until: { $0.map(condition) ?? false })
    }

    @Test func theWatchdogTicksEveryIntervalWhileTheLoopSleeps() throws {
        let (directory, loop, monitor) = try startMonitoredLoop { $0.heartbeatInterval = .seconds(1) }
        defer { loop.stop() }
        let first = try heartbeat(directory)
        #expect(first.pid == getpid())
        #expect(first.startTimeTicks == ProcessSnapshot.processStartTimeTicks())
        #expect(first.intervalMilliseconds == 1000)
        #expect(first.thresholdMicroseconds == 250_000)
        // The loop sleeps; the watchdog is parked, but wakes once a second to say it is alive.
        let later = waitFor(directory) { $0.tickMonotonicNanoseconds >= first.tickMonotonicNanoseconds + 900_000_000 }
        #expect(later != nil && later!.tickMonotonicNanoseconds >= first.tickMonotonicNanoseconds + 900_000_000)
        // The test loop wakes every 250 ms (its run(before:) timeout): idle or watching, never a hang.
        #expect(later?.state == .idle || later?.state == .watching)
        #expect(later.map { RunLoopActivityName.of($0.lastActivity) } != "none")
        monitor.stop()
        // A stopped monitor leaves no heartbeat behind.
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/" + MonitorHeartbeat.fileName(pid: getpid())))
    }

    /// `CLOCK_MONOTONIC`, ns: the heartbeat's tick clock.
    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Lag below the threshold, published: a run loop kept about 90 % busy by a timer that works
    /// 18 ms per firing (each its own iteration, far under the 200 ms threshold; the next firing
    /// is scheduled 2 ms after the callback returns) shows a busy ratio over 0.5, where the idle
    /// page read under 0.2 (0.80 to 1.0 alone; 0.80 beside a build and 0.64 once in a run of the
    /// whole suite, where firings that wake late leave the loop asleep meanwhile: the loop really
    /// is less busy then) and a longest
    /// piece under the threshold in the page its watchdog publishes, with no hang; before the work
    /// began the page read it nearly idle. Its lag histogram counts the firings' pieces: 18 ms on
    /// the 4 ms coarse clock reads 12 to 24 ms (over 10, at most 25 ms), none over 250 ms.
    @Test func aLoopBusyBelowTheThresholdPublishesItsBusyRatio() throws {
        let (directory, loop, monitor) = try startMonitoredLoop(threshold: .milliseconds(200)) {
            $0.heartbeatInterval = .seconds(1)
            $0.leadUpWindow = .seconds(2)
        }
        defer { loop.stop() }
        let idlePage = try #require(waitFor(directory) { $0.loopBusyWindow != nil && $0.loopLag != nil }, "a run loop's page has the sections")
        let idle = try #require(idlePage.loopBusyWindow)
        #expect(idle.ratio < 0.2, "\(idle)")
        let stop = Atomic<Bool>(false)
        let started = Self.monotonicNanoseconds()
        loop.perform {
            let timer = Timer(fire: Date(), interval: 0.002, repeats: true) { timer in
                if stop.load(ordering: .relaxed) { return timer.invalidate() }
                _ = spinInTestHang(milliseconds: 18)
            }
            RunLoop.current.add(timer, forMode: .default)
        }
        // A page ticked once the whole 2 s window lies in the busy time.
        let page = waitFor(directory) { $0.tickMonotonicNanoseconds > started + 2_300_000_000 }
        stop.store(true, ordering: .relaxed)
        let busy = try #require(page?.loopBusyWindow, "\(String(describing: page))")
        print("heartbeat busy ratio measured: \(busy.ratio), longest piece \(Double(busy.longestNanoseconds) / 1e6) ms, window \(Double(busy.windowNanoseconds) / 1e6) ms")
        #expect(busy.ratio > 0.5, "\(busy)")
        #expect(busy.windowNanoseconds > 1_800_000_000 && busy.windowNanoseconds <= 2_000_000_000, "\(busy)")
        #expect(busy.longestNanoseconds > 10_000_000 && busy.longestNanoseconds < 200_000_000, "\(busy)")
        #expect(page?.hangsDetected == 0)
        let lag = try #require(page?.loopLag).since(idlePage.loopLag)
        print("lag histogram measured: \(lag.buckets), \(Double(lag.totalNanoseconds) / 1e6) ms in all")
        // 2.3 s at 90 % busy is about 115 firings; at least 40 (a loaded machine fires fewer).
        #expect(lag.buckets[7] >= 40, "\(lag)")
        #expect(lag.buckets[11...].allSatisfy { $0 == 0 }, "\(lag)")
        #expect(lag.totalNanoseconds > 1_000_000_000, "\(lag)")
        monitor.stop()
    }

    @Test func aHangShowsAsRecordingAndIsCounted() throws {
        let (directory, loop, monitor) = try startMonitoredLoop { $0.heartbeatInterval = .seconds(1) }
        defer { loop.stop() }
        loop.afterDelay(0.05) { _ = hangInTimerCallback(milliseconds: 900) }
        let recording = waitFor(directory) { $0.state == .recording }
        #expect(recording?.state == .recording)
        #expect(recording.map { RunLoopActivityName.of($0.lastActivity) } == "afterWaiting")
        directory.waitForFinished(1)
        let after = waitFor(directory) { $0.hangsDetected == 1 && $0.state != .recording }
        #expect(after?.hangsDetected == 1)
        monitor.stop()
    }

    @Test func zeroMeansNoFile() throws {
        let (directory, loop, monitor) = try startMonitoredLoop { $0.heartbeatInterval = .zero }
        defer { loop.stop() }
        #expect(throws: MonitorHeartbeat.ReadError.self) { try heartbeat(directory) }
        monitor.stop()
    }

    @Test func thePageRoundTripsThroughTheDocumentedLayout() {
        let beat = MonitorHeartbeat(
            pid: 4242, startTimeTicks: 99, startedUnixMilliseconds: 1_795_000_000_000, tickMonotonicNanoseconds: 123_456_789,
            tickUnixMilliseconds: 1_795_000_001_000, intervalMilliseconds: 10_000, state: .watching,
            activityWord: 1000 << 8 | 4, hangsDetected: 7, thresholdMicroseconds: 250_000)
        let bytes = beat.encoded()
        #expect(MonitorHeartbeat.decode(bytes) == beat)
        #expect(Array(bytes[0..<8]) == Array("HWHB0001".utf8))
        #expect(beat.lastActivity == 4)
        #expect(beat.lastActivityMonotonicNanoseconds == 1000 * 1024)
        var wrong = bytes
        wrong[64] = 9
        #expect(MonitorHeartbeat.decode(wrong) == nil)
        #expect(MonitorHeartbeat.pid(fromFileName: ".heartbeat-17") == 17)
        #expect(MonitorHeartbeat.pid(fromFileName: ".heartbeat-x") == nil)
        #expect(MonitorHeartbeat.pid(fromFileName: "hang-1.json") == nil)
    }

    /// 20 iterations busy about 3 ms each are counted one by one, each in the bucket of its own
    /// busy time. A busy machine lengthens an iteration (the loop thread waits for a CPU within
    /// it), so the test measures each one's bounds and holds the histogram to those: at least its
    /// block's run (the block runs within it), at most from the end of the block before to the
    /// start of the block after (the loop went to sleep between each two).
    @Test func theLoopHistogramCountsEachIterationInItsBucket() throws {
        let (directory, loop, monitor) = try startMonitoredLoop {
            $0.heartbeatInterval = .seconds(1)
            $0.loopHistogram = true
        }
        defer { loop.stop() }
        // The page speaks for the monitor from the watchdog's first turn after the start.
        let before = try #require(waitFor(directory) { $0.loopBusy != nil }?.loopBusy, "a monitor with the histogram publishes it")
        let share = CPUShare(tid: loop.tid)
        let blocks = Mutex<[(start: UInt64, end: UInt64)]>([])
        // One more before and after the 20: their blocks bound the first and the last.
        for _ in 0..<22 {
            loop.iteration {
                let start = UnsafeClock.monotonicNanoseconds()
                _ = spinInTestHang(milliseconds: 3)
                let end = UnsafeClock.monotonicNanoseconds()
                blocks.withLock { $0.append((start, end)) }
            }
        }
        let runs = blocks.withLock { $0 }
        let bounds = (1...20).map { (least: runs[$0].end - runs[$0].start, most: runs[$0 + 1].start - runs[$0 - 1].end) }
        let least = bounds.map { LoopBusyHistogram.bucket($0.least) }
        let most = bounds.map { LoopBusyHistogram.bucket($0.most) }
        // What the counts added since `before` must show (other iterations, the idle loop's
        // wakes, only add to them): for every bucket k, at least as many counted in k or above as
        // there are iterations whose least busy time is in k or above, and in k or below as whose
        // most is. 20 iterations lumped into one fail both.
        func unmet(_ added: LoopBusyHistogram.Counts) -> [String] {
            var unmet: [String] = []
            for k in 0..<LoopBusyHistogram.bucketCount {
                let atLeast = least.filter { $0 >= k }.count, atMost = most.filter { $0 <= k }.count
                if added.buckets[k...].reduce(0, +) < atLeast { unmet.append("fewer than \(atLeast) in bucket \(k) or above") }
                if added.buckets[...k].reduce(0, +) < atMost { unmet.append("fewer than \(atMost) in bucket \(k) or below") }
            }
            if added.totalNanoseconds < bounds.reduce(0, { $0 + $1.least }) { unmet.append("a total under the blocks' own") }
            return unmet
        }
        let after = waitFor(directory) { $0.loopBusy.map { unmet($0.since(before)).isEmpty } ?? false }
        let added = try #require(try (after ?? heartbeat(directory)).loopBusy).since(before)
        #expect(
            unmet(added).isEmpty,
            "\(unmet(added)): added \(added); least buckets \(least), most \(most) (the loop waited for a CPU \(Int(share.waitedShare * 100)) %)")
        monitor.stop()
    }

    @Test func withoutTheOptionThereIsNoHistogram() throws {
        let (directory, loop, monitor) = try startMonitoredLoop { $0.heartbeatInterval = .seconds(1) }
        defer { loop.stop() }
        let started = UnsafeClock.monotonicNanoseconds()
        // A page the watchdog published after the start (so after the monitor joined it).
        let page = waitFor(directory) { $0.tickMonotonicNanoseconds > started }
        #expect(page != nil && page?.loopBusy == nil, "\(String(describing: page))")
        monitor.stop()
        var configuration = HangMonitor.Configuration(serviceName: "x", reportDirectory: directory.path)
        configuration.heartbeatInterval = .zero
        configuration.loopHistogram = true
        #expect(throws: HangMonitorError.self) { try HangMonitor(configuration: configuration) }
    }

    /// The loop thread counts with the C bounds; the agent reads with the Swift ones.
    @Test func theCAndSwiftBucketBoundsAgree() {
        // (The C header's table, as the bridge reads it: its bounds, one fewer than its buckets.)
        let cBounds = UnsafeLoopHistogram.bucketBounds
        #expect(cBounds == LoopBusyHistogram.bounds)
        #expect(cBounds.count + 1 == LoopBusyHistogram.bucketCount)
    }

    @Test func aPageWithTheHistogramRoundTrips() {
        let counts = LoopBusyHistogram.Counts(buckets: (0..<UInt64(LoopBusyHistogram.bucketCount)).map { $0 * 3 }, totalNanoseconds: 77)
        let beat = MonitorHeartbeat(
            pid: 1, startTimeTicks: 2, startedUnixMilliseconds: 3, tickMonotonicNanoseconds: 4, tickUnixMilliseconds: 5,
            intervalMilliseconds: 6, state: .idle, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 1, loopBusy: counts,
            callsCutShort: 9)
        #expect(MonitorHeartbeat.decode(beat.encoded()) == beat)
        // A page from before the histogram (128 bytes) still reads.
        var old = beat
        old.loopBusy = nil
        old.callsCutShort = 0
        #expect(MonitorHeartbeat.decode(Array(beat.encoded().prefix(MonitorHeartbeat.minimumSize))) == old)
    }
}
