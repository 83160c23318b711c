import Foundation
@_spi(Internal) import HangWatchReport
import Testing

@testable import HangWatchAgent

@Suite struct MonitorHealthTests {
    /// The monitored process, as /proc would describe it (scripted: the decision is pure).
    let own = ProcStat(state: "S", startTimeTicks: 777_777)

    /// `CLOCK_MONOTONIC` "now" for every assessment: the decision is a function of the times given.
    let now: UInt64 = 50_000 * 1_000_000_000

    func beat(tickSecondsAgo: Double, interval: UInt64 = 10_000, state: MonitorHeartbeat.State = .idle, startTicks: UInt64? = nil) -> MonitorHeartbeat {
        MonitorHeartbeat(
            pid: getpid(), startTimeTicks: startTicks ?? own.startTimeTicks, startedUnixMilliseconds: 0,
            tickMonotonicNanoseconds: now - UInt64(tickSecondsAgo * 1e9), tickUnixMilliseconds: 0, intervalMilliseconds: interval,
            state: state, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000)
    }

    func assess(_ heartbeat: MonitorHeartbeat, status: ProcStat?) -> MonitorHealth {
        MonitorHealth.assess(heartbeat, status: status, nowMonotonicNanoseconds: now, grace: .seconds(5))
    }

    @Test func aTickingWatchdogIsHealthyEvenWhenTheLoopIsIdle() {
        #expect(assess(beat(tickSecondsAgo: 3), status: own) == .healthy)
        // Within twice the interval plus the grace period (2 × 10 s + 5 s), to the nanosecond.
        #expect(assess(beat(tickSecondsAgo: 24), status: own) == .healthy)
        #expect(assess(beat(tickSecondsAgo: 25), status: own) == .healthy)
        #expect(assess(beat(tickSecondsAgo: 25.000_001), status: own).isProblem)
        // A tick stamped after "now" (read in between) is not silence.
        #expect(MonitorHealth.assess(beat(tickSecondsAgo: 0), status: own, nowMonotonicNanoseconds: now - 1, grace: .seconds(5)) == .healthy)
    }

    @Test func aSilentWatchdogInALiveProcessIsFlagged() {
        guard case .watchdogSilent(let seconds) = assess(beat(tickSecondsAgo: 26), status: own) else {
            Issue.record("not flagged")
            return
        }
        #expect(seconds == 26)
        #expect(assess(beat(tickSecondsAgo: 26), status: own).isProblem)
    }

    @Test func aStoppedProcessIsFlaggedAsStoppedNotAsASilentWatchdog() {
        #expect(assess(beat(tickSecondsAgo: 100), status: ProcStat(state: "T", startTimeTicks: own.startTimeTicks)) == .processStopped)
    }

    /// A frozen cgroup (`docker pause`) runs nothing, the watchdog included: stopped, not a silent
    /// watchdog. Its cgroup is read only once the watchdog looks silent.
    @Test func aFrozenProcessIsStoppedNotASilentWatchdogAndItsCgroupIsReadOnlyThen() {
        var asked = 0
        let frozen = { () -> Bool in asked += 1; return true }
        #expect(MonitorHealth.assess(beat(tickSecondsAgo: 100), status: own, nowMonotonicNanoseconds: now, grace: .seconds(5), frozen: frozen) == .processStopped)
        #expect(asked == 1)
        #expect(MonitorHealth.assess(beat(tickSecondsAgo: 3), status: own, nowMonotonicNanoseconds: now, grace: .seconds(5), frozen: frozen) == .healthy)
        #expect(asked == 1, "read for a ticking watchdog")
        let thawed = MonitorHealth.assess(beat(tickSecondsAgo: 100), status: own, nowMonotonicNanoseconds: now, grace: .seconds(5), frozen: { false })
        #expect(thawed == .watchdogSilent(seconds: 100))
    }

    @Test func aGoneProcessLeavesAStaleFile() {
        #expect(assess(beat(tickSecondsAgo: 1), status: nil) == .stale(reason: "gone"))
        #expect(assess(beat(tickSecondsAgo: 1, startTicks: own.startTimeTicks + 7), status: own) == .stale(reason: "pid reused"))
        #expect(!assess(beat(tickSecondsAgo: 1), status: nil).isProblem)
    }

    @Test func aStoppedMonitorIsNotAProblem() {
        #expect(assess(beat(tickSecondsAgo: 500, state: .stopped), status: own) == .stopped)
    }

    @Test func aHeartbeatFileIsReadThroughItsSeqlock() throws {
        let fixture = try SpoolFixture()
        let path = fixture.root + "/" + MonitorHeartbeat.fileName(pid: getpid())
        let heartbeat = beat(tickSecondsAgo: 1)
        try Data(heartbeat.encoded()).write(to: URL(fileURLWithPath: path))
        #expect(try MonitorHeartbeat.read(path: path) == heartbeat)
        // Mid-update (odd sequence) forever: the reader gives up instead of returning a torn copy.
        var busy = heartbeat.encoded()
        busy[8] = 3
        try Data(busy).write(to: URL(fileURLWithPath: path))
        #expect(throws: MonitorHeartbeat.ReadError.busy(path: path)) { try MonitorHeartbeat.read(path: path) }
        try Data(count: 16).write(to: URL(fileURLWithPath: path))
        #expect(throws: MonitorHeartbeat.ReadError.self) { try MonitorHeartbeat.read(path: path) }
    }
}
