import Dispatch
import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Logging
import Synchronization
import Testing

/// The pool watch's decisions on scripted time: a probe per threshold, its start delay counted,
/// a probe not started within the threshold is one starvation, captured at detection, followed
/// while it lasts, and ended exactly when the probe starts. Threshold 250 ms, sampling every 50 ms;
/// times in milliseconds from the script's start.
@Suite struct PoolWatchTests {
    final class Harness: @unchecked Sendable {
        let clock: ScriptedClock
        let environment: FakeWatchdogEnvironment
        let histogram = PoolProbeHistogram(bounds: [100_000, 1_000_000, 250_000_000])
        let sink = RecordingPoolSink()
        let threads: ScriptedPoolThreads
        /// Delay of each probe's start in milliseconds, by probe number (a missing one: `defaultDelay`).
        var delays: [Int: Double] = [:]
        var defaultDelay = 0.04
        private(set) var enqueued: [UInt64] = []
        var watch: PoolWatch!
        /// The wake of the watchdog that steps the watch.
        let wake: WatchdogWake

        let wakeSource: ScriptedPoolWake?

        init(
            clock: ScriptedClock = ScriptedClock(start: 1_000_000_000), looker: (any PoolThreadLooking)? = nil,
            attach: (@Sendable (CooperativePool) -> Void)? = nil, attachEveryWorker: (@Sendable (Int) -> Void)? = nil,
            wakeSource: ScriptedPoolWake? = nil, wake: WatchdogWake = WatchdogWake()
        ) {
            self.clock = clock
            self.wake = wake
            self.wakeSource = wakeSource
            environment = FakeWatchdogEnvironment(clock: clock)
            threads = ScriptedPoolThreads(clock: clock)
            watch = PoolWatch(
                settings: .init(thresholdMicroseconds: { 250_000 }, sampleIntervalMicroseconds: 50_000, serviceName: "svc"),
                wake: wake, enqueue: { [unowned self] slot in self.enqueue(slot) }, attach: attach,
                attachEveryWorker: attachEveryWorker, threads: threads,
                looker: looker,
                sink: sink, histogram: histogram, naming: ReportNaming(), statistics: nil, images: nil, functionStart: { $0 & ~0xff },
                wakeSource: wakeSource, logger: Logger(label: "test"))
            clock.whenScriptEnds = { [unowned self] in watch.requestStop() }
        }

        func t(_ milliseconds: Double) -> UInt64 { 1_000_000_000 + UInt64(milliseconds * 1000) }
        func ms(_ microseconds: UInt64) -> Double { Double(Int64(microseconds) - 1_000_000_000) / 1000 }

        private func enqueue(_ slot: PoolProbeSlot) {
            // The hooks see the watch's own probes too (they must not wake it).
            wakeSource?.enqueue()
            let number = enqueued.count
            enqueued.append(clock.now)
            let delay = delays[number] ?? defaultDelay
            clock.after(UInt64(delay * 1000)) { [clock] in slot.markStarted(at: clock.now) }
        }

        /// Runs the watch, a lane of a watchdog on this thread, until `milliseconds`.
        func run(until milliseconds: Double) {
            clock.at(t(milliseconds)) { [watch] in watch!.requestStop() }
            Watchdog(environment: environment, wake: wake, lanes: [watch]).run()
        }
    }

    @Test func aHealthyPoolIsProbedOncePerThresholdAndItsDelaysCounted() {
        let h = Harness()
        h.run(until: 2_010)
        #expect(h.sink.events.isEmpty)
        // One probe per threshold, the next as soon as the last one was looked at.
        #expect(h.enqueued.map(h.ms) == stride(from: 0.0, through: 2_000, by: 250).map { $0 })
        let delays = h.histogram.snapshot
        #expect(delays.counts == [8, 0, 0, 0] && delays.totalNanoseconds == 8 * 40_000 && delays.starvations == 0)
        // One wait per probe: the watch does not wake between them.
        #expect(h.clock.waits.count == 9)
    }

    @Test func aProbeThatWaitsPastTheThresholdIsOneStarvationEndingWhenItStarts() throws {
        let h = Harness()
        h.delays[2] = 700
        h.run(until: 3_000)

        #expect(h.sink.events == ["starved", "recovered"])
        let (recording, outcome) = try #require(h.sink.recovered.first)
        #expect(outcome == .recovered)
        #expect(h.ms(recording.startMicroseconds) == 500)
        #expect(h.ms(recording.detectedMicroseconds) == 750)
        #expect(h.ms(try #require(recording.endMicroseconds)) == 1_200)
        #expect(recording.threads.map(\.tid) == [101, 102])
        // Counted as a starvation, and its delay (700 ms) in the histogram's last bucket.
        let delays = h.histogram.snapshot
        #expect(delays.starvations == 1 && delays.counts.last == 1)
        // Probing resumes once the probe ran: the next one goes out at the first look after it.
        #expect(h.enqueued.map(h.ms).prefix(4) == [0, 250, 500, 1_200])
    }

    @Test func poolThreadsThatAppearWhileStarvedAreCapturedToo() throws {
        let h = Harness()
        h.delays[0] = 1_000
        h.threads.appearing = [(at: h.t(600), tid: 103)]
        h.run(until: 2_000)

        #expect(h.sink.events == ["starved", "progressed", "recovered"])
        let recording = try #require(h.sink.recovered.first?.recording)
        #expect(recording.threads.map(\.tid) == [101, 102, 103])
        // Looked for every sample interval until the probe started, never after.
        #expect(h.threads.looks.allSatisfy { $0 <= h.t(1_000) })
        #expect(h.ms(try #require(recording.endMicroseconds)) == 1_000)
    }

    @Test func aProbeLateButStartedBeforeTheLookIsNoStarvation() {
        let h = Harness()
        h.delays[1] = 249
        h.run(until: 1_000)
        #expect(h.sink.events.isEmpty)
        #expect(h.histogram.snapshot.counts[2] == 1)
    }

    @Test func oneJobHoldingAPoolThreadIsSampledAtEveryLookAndReportedOnce() throws {
        let clock = ScriptedClock(start: 1_000_000_000)
        let looker = ScriptedPoolLooker(clock: clock)
        // Thread 101 runs one job from 300 to 1,000 ms (it sleeps in it); thread 102 stays idle.
        looker.job = { now in (1_000_300_000..<1_001_000_000).contains(now) ? 101 : nil }
        let h = Harness(clock: clock, looker: looker)
        h.run(until: 1_500)

        #expect(h.sink.events == ["job held", "job ended"], "\(h.sink.events)")
        let (recording, outcome) = try #require(h.sink.jobs.first)
        #expect(outcome == .recovered)
        #expect(recording.thread?.tid == 101 && recording.source == .poolJob)
        // One job, by the tracker's proof: the report's kind says which proof.
        #expect(recording.kind?.name == "oneJob", "\(String(describing: recording.kind))")
        #expect(recording.kind?.reason.hasPrefix("the same ") == true, "\(String(describing: recording.kind))")
        // Looks every 50 ms: first seen at 300 (start half-way from 250), held once 250 ms from
        // that start were seen (at 550), last seen at 950 (end half-way to 1,000).
        #expect(h.ms(recording.startMicroseconds) == 275)
        #expect(h.ms(recording.detectedMicroseconds) == 550)
        #expect(h.ms(try #require(recording.endMicroseconds)) == 975)
        #expect(recording.samples.map { h.ms($0.microseconds) } == stride(from: 300.0, through: 950, by: 50).map { $0 })
        // Every 50 ms until the stop (at 1,500 ms: no look then).
        #expect(Set(looker.looks.map { h.ms($0) }) == Set(stride(from: 50.0, through: 1_450, by: 50).map { $0 }))
    }

    /// Seen in CI (`hangwatch-faults pool --mode block` beside a busy CPU): a burst of blocking
    /// tasks spawned right behind a probe, the probe starting on one worker a moment after the
    /// first tasks were seen on the others. Its start is no room for them (it was ahead of them in
    /// the queue): the next probe does not start, and the one starvation report holds them all.
    @Test func aProbeAheadOfABurstStartingAfterItsFirstTasksWereSeenProvesNoRoomForThem() throws {
        let clock = ScriptedClock(start: 1_000_000_000)
        let looker = ScriptedPoolLooker(clock: clock)
        // Both threads blocked in a job each from 270 to 1,000 ms (first seen at the 300 ms look).
        looker.jobs = { now in (1_000_270_000..<1_001_000_000).contains(now) ? [101, 102] : [] }
        let h = Harness(clock: clock, looker: looker)
        // The probe enqueued at 250 ms starts at 310 ms; the next (500 ms) once the jobs end.
        h.delays[1] = 60
        h.delays[2] = 500
        h.run(until: 1_500)

        #expect(h.sink.jobs.isEmpty, "\(h.sink.jobs.map { ($0.recording.thread?.tid ?? 0, h.ms($0.recording.startMicroseconds)) })")
        #expect(h.sink.events.filter { $0 != "progressed" } == ["starved", "recovered"], "\(h.sink.events)")
        let recording = try #require(h.sink.recovered.first?.recording)
        #expect(h.ms(recording.startMicroseconds) == 500)
        #expect(recording.threads.map(\.tid) == [101, 102])
    }

    @Test func aPoolThreadNotAttachedGetsAttachJobsUntilOneRunsOnItOrPatienceRunsOut() {
        let clock = ScriptedClock(start: 1_000_000_000)
        let looker = ScriptedPoolLooker(clock: clock)
        // 102 is not attached; the fourth attach job runs on it. 103 (named like a worker, started
        // by a job) never runs one.
        looker.unattached = [102, 103]
        let attaches = Counter()
        let h = Harness(clock: clock, looker: looker) { pool in
            #expect(pool == .default)
            if attaches.increment() == 4 { looker.unattached.remove(102) }
        }
        h.run(until: 6_000)
        // Looks every 50 ms from 50: 102 gets one job at each of the first two looks (the second
        // attaches it); 103 one at every look for 5 s (looks at 50 to 5,000), then none.
        #expect(attaches.value == 2 + 100, "\(attaches.value)")
    }

    /// An unattached worker of another priority's pool gets its attach job at that priority (a
    /// `.medium` job never runs on it).
    @Test func aWorkerOfAnotherPoolGetsAttachJobsAtItsPriority() {
        let clock = ScriptedClock(start: 1_000_000_000)
        let looker = ScriptedPoolLooker(clock: clock)
        looker.unattached = [103]
        looker.names[103] = "r-initiated-qos"
        let pools = Mutex<[CooperativePool]>([])
        let h = Harness(clock: clock, looker: looker) { pool in
            pools.withLock { $0.append(pool) }
            looker.unattached.remove(103)
        }
        h.run(until: 200)
        #expect(pools.withLock { $0 } == [.userInitiated])
    }

    @Test func stoppingDuringAStarvationEndsItAsMonitorStopped() throws {
        let h = Harness()
        h.defaultDelay = 10_000
        h.run(until: 400)
        let (recording, outcome) = try #require(h.sink.recovered.first)
        #expect(outcome == .monitorStopped)
        #expect(h.ms(try #require(recording.endMicroseconds)) == 400)
        #expect(h.histogram.snapshot.probes == 0)
    }
}

/// The pool watch at rest: while every pool thread is idle for a second it stops probing and
/// looking, and the enqueue hooks (scripted) or a delayed job's due time wake it. Looks every 50 ms,
/// threshold 250 ms; the probes start 40 µs after they are enqueued.
@Suite struct PoolWatchRestTests {
    /// Attach jobs for every worker, queued ahead of the job that wakes the watch (the width asked each time).
    let attachesAhead = Recorded<Int>()

    func harness(
        clock: ScriptedClock = ScriptedClock(start: 1_000_000_000), wake watchdogWake: WatchdogWake = WatchdogWake(),
        job: @escaping (UInt64) -> Int32?, configure: (ScriptedPoolWake) -> Void = { _ in }
    ) -> (PoolWatchTests.Harness, ScriptedPoolLooker, ScriptedPoolWake) {
        let looker = ScriptedPoolLooker(clock: clock)
        looker.job = job
        let wake = ScriptedPoolWake(clock: clock)
        configure(wake)
        return (
            PoolWatchTests.Harness(
                clock: clock, looker: looker, attachEveryWorker: { [attachesAhead] width in attachesAhead.append(width) },
                wakeSource: wake, wake: watchdogWake), looker, wake
        )
    }

    @Test func anIdlePoolLetsTheWatchRestUntilAJobIsEnqueued() throws {
        // Thread 101 runs one job from 3,000 to 3,800 ms (it sleeps in it), enqueued at 3,000.
        let (h, looker, wake) = harness(job: { (1_003_000_000..<1_003_800_000).contains($0) ? 101 : nil })
        h.clock.at(h.t(3_000)) { wake.enqueue() }
        h.run(until: 6_000)

        // Idle from the first look (50 ms): at the probe at 1,250 ms it had been for 1.2 s. The
        // hooks were armed then, a probe enqueued (its own: no wake), and the look after it
        // (1,300) found the pool idle still: rest, until the job's enqueue.
        #expect(wake.arms.map(h.ms).first == 1_250)
        let looks = looker.looks.map(h.ms)
        #expect(!looks.contains { $0 > 1_300 && $0 < 3_000 }, "\(looks)")
        #expect(looks.contains(1_300) && looks.contains(3_000) && looks.contains(3_050))
        // The job: held, dated from the enqueue that woke the watch, which looked at once (and
        // saw it: half-way from the enqueue to that sighting).
        #expect(h.sink.events == ["job held", "job ended"], "\(h.sink.events)")
        let (recording, _) = try #require(h.sink.jobs.first)
        #expect(h.ms(recording.startMicroseconds) == 3_000)
        #expect(h.ms(try #require(recording.endMicroseconds)) == 3_775)
        // The enqueue that woke it first queued one attach job per worker the pool may have (a
        // fresh worker is prepared before it takes the job); the stop that ended the second rest none.
        #expect(attachesAhead.values == [ProcessInfo.processInfo.activeProcessorCount])
        // Idle again from 3,800: it rested a second time (probe at 5,000 ms, 1.2 s later).
        #expect(h.histogram.snapshot.rests == 2)
        #expect(!looks.contains { $0 > 5_050 }, "\(looks)")
    }

    @Test func aDelayedJobWakesTheRestingWatchWhenItFallsDue() throws {
        // A `Task.sleep` resumption due at 2,500 ms, blocking thread 101 until 3,100 ms: no enqueue wakes the watch.
        let (h, looker, _) = harness(job: { (1_002_500_000..<1_003_100_000).contains($0) ? 101 : nil }) { $0.dueTimes = [1_002_500_000] }
        h.run(until: 3_500)

        let looks = looker.looks.map(h.ms)
        #expect(!looks.contains { $0 > 1_300 && $0 < 2_500 }, "\(looks)")
        let (recording, _) = try #require(h.sink.jobs.first)
        #expect(h.ms(recording.startMicroseconds) == 2_525)
        #expect(h.histogram.snapshot.rests == 1)
    }

    @Test func aJobThatStartsAsTheHooksAreArmedIsSeenByTheLastLookAndKeepsTheWatchAwake() throws {
        // Enqueued before the hooks were armed at 1,250 ms (no wake), it starts at 1,260: the look
        // after the rest's probe (1,300) finds it, so the watch does not rest and reports it.
        let (h, looker, wake) = harness(job: { (1_001_260_000..<1_001_900_000).contains($0) ? 101 : nil })
        h.run(until: 2_000)

        #expect(wake.arms.map(h.ms) == [1_250])
        #expect(h.histogram.snapshot.rests == 0)
        #expect(h.sink.events == ["job held", "job ended"], "\(h.sink.events)")
        #expect(Set(looker.looks.map(h.ms)).isSuperset(of: stride(from: 1_300.0, through: 1_950, by: 50)))
    }

    @Test func aProcessThatNeverUsedThePoolIsNotProbedUntilItsFirstJob() throws {
        // No worker until a job is enqueued at 2,000 ms; it holds thread 101 until 2,800.
        let (h, looker, wake) = harness(job: { (1_002_000_000..<1_002_800_000).contains($0) ? 101 : nil })
        h.threads.workersFrom = h.t(2_000)
        h.clock.at(h.t(2_000)) { wake.enqueue() }
        h.run(until: 4_000)

        // Dormant from the first step: the hooks armed at once, then looked for a worker twice (at
        // the start and a look interval later), and nothing more until the job.
        #expect(wake.arms.map(h.ms).first == 0)
        #expect(h.threads.workerChecks.map(h.ms).prefix(3) == [0, 0, 50], "\(h.threads.workerChecks.map(h.ms))")
        #expect(h.enqueued.map(h.ms).first == 2_000, "\(h.enqueued.map(h.ms))")
        #expect(!looker.looks.contains { $0 < h.t(2_000) })
        #expect(h.clock.waits.filter { $0.at < h.t(2_000) }.count <= 2, "\(h.clock.waits.map { h.ms($0.at) })")
        // The job is reported, dated from its enqueue (the look at the wake-up saw it), and its
        // enqueue first queued one attach job per worker the pool may have.
        #expect(h.sink.events.prefix(2) == ["job held", "job ended"], "\(h.sink.events)")
        let (recording, _) = try #require(h.sink.jobs.first)
        #expect(h.ms(recording.startMicroseconds) == 2_000)
        #expect(attachesAhead.values.first == ProcessInfo.processInfo.activeProcessorCount)
    }

    @Test func aWorkerMadeBeforeTheHooksWereArmedEndsTheDormancyAtTheSecondLook() {
        // A job enqueued just before the hooks were armed (no wake) made its worker at 10 ms.
        let (h, _, wake) = harness(job: { _ in nil })
        h.threads.workersFrom = h.t(10)
        h.run(until: 1_000)
        #expect(wake.arms.map(h.ms).first == 0)
        #expect(h.enqueued.map(h.ms).first == 50, "\(h.enqueued.map(h.ms))")

        // A process that used the pool already probes at once, never dormant.
        let (used, _, usedWake) = harness(job: { _ in nil })
        used.run(until: 300)
        #expect(used.enqueued.map(used.ms).first == 0 && usedWake.arms.isEmpty)
    }

    @Test func aWatchWhoseHooksWereReplacedOrWithoutThemNeverRests() {
        let (h, looker, replaced) = harness(job: { _ in nil }) { $0.hooksCurrent = false }
        h.run(until: 3_000)
        #expect(h.histogram.snapshot.rests == 0 && replaced.arms.isEmpty)
        #expect(looker.looks.count == 59, "\(looker.looks.count)")

        // Too many delayed jobs pending to know the next one: no rest either.
        let (h2, _, unknown) = harness(job: { _ in nil }) { $0.unknownDelayed = true }
        h2.run(until: 3_000)
        #expect(h2.histogram.snapshot.rests == 0 && unknown.arms.isEmpty)
    }
}

/// The runtime's enqueue hooks on scripted time: `enqueue()` is a job enqueued now (a wake when
/// armed, unless it is the watch's own), `dueTimes` the delayed jobs.
final class ScriptedPoolWake: PoolWakeSource, @unchecked Sendable {
    let clock: ScriptedClock
    var hooksCurrent = true
    var dueTimes: [UInt64] = []
    var unknownDelayed = false
    private var armed: (wake: WatchdogWake, ahead: @Sendable () -> Void)?
    private var wokenAt: UInt64?
    private var own = false
    /// When the watch armed the hooks.
    private(set) var arms: [UInt64] = []

    init(clock: ScriptedClock) {
        self.clock = clock
    }

    func canRest() -> Bool { hooksCurrent }

    func arm(_ wake: WatchdogWake, ahead: @escaping @Sendable () -> Void) {
        armed = (wake, ahead)
        wokenAt = nil
        arms.append(clock.now)
    }

    func disarm() -> UInt64? {
        armed = nil
        return wokenAt
    }

    func ownEnqueues(_ body: () -> Void) {
        own = true
        defer { own = false }
        body()
    }

    func nextDelayed(after now: UInt64) -> PoolDelayedJobs {
        if unknownDelayed { return .unknown }
        return dueTimes.filter { $0 > now }.min().map { .due($0) } ?? PoolDelayedJobs.none
    }

    /// A job enqueued to the pool now.
    func enqueue() {
        guard !own, let armed else { return }
        self.armed = nil
        wokenAt = clock.now
        armed.ahead()
        armed.wake.signal()
    }
}

/// Looks at pool threads 101 and 102 on scripted time: the one `job` names runs one job (the same
/// activation at every look, blocked in it), the others are idle workers.
final class ScriptedPoolLooker: PoolThreadLooking, @unchecked Sendable {
    let clock: ScriptedClock
    var job: (UInt64) -> Int32? = { _ in nil }
    /// Threads in a job besides `job`'s (each blocked in its own).
    var jobs: (UInt64) -> Set<Int32> = { _ in [] }
    /// Threads not attached (they ran no probe), besides 101 and 102 (either may be one).
    var unattached: Set<Int32> = []
    /// Thread names other than the default pool's.
    var names: [Int32: String] = [:]
    private(set) var looks: [UInt64] = []

    init(clock: ScriptedClock) {
        self.clock = clock
    }

    func look() -> [(thread: MonitoredThread, sample: StackSample, isWorker: Bool)] {
        looks.append(clock.now)
        return ([Int32(101), 102] + unattached.filter { $0 > 102 }.sorted()).map { tid in
            let thread = MonitoredThread(tid: tid, startTimeTicks: 1, stackLow: 0, stackHigh: 1, name: names[tid] ?? "oot.default-qos", isMain: false)
            var sample = ScriptedSampler.blocked([0x2010, 0x3010, 0x1020], syscall: 230)
            sample.microseconds = clock.now
            if job(clock.now) == tid || jobs(clock.now).contains(tid) {
                sample.method = .unchanged
                sample.asyncCallers = AsyncCallers(
                    after: 1, resumeAddresses: [0x4000], end: .complete, contexts: (0xa0 + UInt(tid) << 12, 0xb0 + UInt(tid) << 12))
            }
            return (thread, sample, !unattached.contains(tid))
        }
    }
}

/// Pool threads on scripted time: 101 and 102 exist from the start, others from when they appear.
final class ScriptedPoolThreads: PoolThreadCapturing, @unchecked Sendable {
    let clock: ScriptedClock
    var appearing: [(at: UInt64, tid: Int32)] = []
    /// When the pool's first worker appears (nil: they exist from the start).
    var workersFrom: UInt64?
    private(set) var looks: [UInt64] = []
    /// When the watch asked whether any worker exists.
    private(set) var workerChecks: [UInt64] = []

    func anyWorkerExists() -> Bool {
        workerChecks.append(clock.now)
        return workersFrom.map { clock.now >= $0 } ?? true
    }

    init(clock: ScriptedClock) {
        self.clock = clock
    }

    func capture(skipping: Set<Int32>, signalAllowed: Bool) -> [PoolThreadSample] {
        looks.append(clock.now)
        let present: [Int32] = [101, 102] + appearing.filter { $0.at <= clock.now }.map(\.tid)
        return present.filter { !skipping.contains($0) }.map { tid in
            var sample = ScriptedSampler.blocked(syscall: 230)
            sample.microseconds = clock.now
            return PoolThreadSample(tid: tid, name: "oot.default-qos", sample: sample, attached: false)
        }
    }
}

final class RecordingPoolSink: PoolSink, @unchecked Sendable {
    private(set) var events: [String] = []
    private(set) var jobs: [(recording: HangRecording, outcome: HangReport.Outcome)] = []
    private(set) var recovered: [(recording: PoolRecording, outcome: HangReport.Outcome)] = []

    func poolStarved(_ recording: PoolRecording) { events.append("starved") }
    func poolProgressed(_ recording: PoolRecording) { events.append("progressed") }
    func poolRecovered(_ recording: PoolRecording, outcome: HangReport.Outcome) {
        events.append("recovered")
        recovered.append((recording, outcome))
    }
    func hangStarted(_ recording: HangRecording) { events.append("job held") }
    func hangProgressed(_ recording: HangRecording) { events.append("job progressed") }
    func hangEnded(_ recording: HangRecording, outcome: HangReport.Outcome) {
        events.append("job ended")
        jobs.append((recording, outcome))
    }
}

/// Counts calls from any thread.
/// Values recorded from any thread, in order.
final class Recorded<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Value] = []

    func append(_ value: Value) { lock.withLock { recorded.append(value) } }
    var values: [Value] { lock.withLock { recorded } }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    /// The count after this call.
    func increment() -> Int { lock.withLock { count += 1; return count } }
    var value: Int { lock.withLock { count } }
}
