@testable import HangWatch
import HangWatchTestSupport
import Testing

/// When one job holds a cooperative-pool thread, decided from scripted looks: threshold 250 ms,
/// looks every 50 ms; times in milliseconds. A thread in a job is blocked in the same system call
/// with no CPU time since the look before (`unchanged`) unless a test says otherwise.
@Suite struct HeldJobTrackerTests {
    static let threshold: UInt64 = 250_000
    let worker = MonitoredThread(tid: 7, startTimeTicks: 100, stackLow: 0, stackHigh: 1, name: "oot.default-qos", isMain: false)
    let other = MonitoredThread(tid: 8, startTimeTicks: 100, stackLow: 0, stackHigh: 1, name: "oot.default-qos", isMain: false)
    let jobA = JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100)

    func t(_ milliseconds: UInt64) -> UInt64 { 1_000_000 + milliseconds * 1000 }

    func look(_ thread: MonitoredThread, _ activation: JobActivation?, at milliseconds: UInt64) -> HeldJobTracker.Look {
        var sample = ScriptedSampler.blocked()
        if activation != nil { sample.method = .unchanged }
        sample.microseconds = t(milliseconds)
        return HeldJobTracker.Look(thread: thread, sample: sample, activation: activation, isWorker: true)
    }

    /// Runs looks every 50 ms from 0 to `until`; `job(ms)` is what the worker runs then. Another
    /// pool thread is idle throughout (the pool has room).
    func run(_ tracker: inout HeldJobTracker, until: UInt64, from: UInt64 = 0, job: (UInt64) -> JobActivation?) -> [(UInt64, HeldJobTracker.Event)] {
        var events: [(UInt64, HeldJobTracker.Event)] = []
        for ms in stride(from: from, through: until, by: 50) {
            let looks = [look(worker, job(ms), at: ms), look(other, nil, at: ms)]
            events += tracker.observe(looks, at: t(ms), thresholdMicroseconds: Self.threshold).map { (ms, $0) }
        }
        return events
    }

    @Test func oneJobSeenPastTheThresholdIsHeldFromHalfWayBeforeItsFirstSightingUntilHalfWayAfterItsLast() throws {
        var tracker = HeldJobTracker()
        // The job runs from 120 to 530 ms: first seen at 150, last at 500.
        let events = run(&tracker, until: 700) { (120..<530).contains($0) ? jobA : nil }
        try #require(events.count == 4, "\(events.map(\.1))")
        guard case (let heldAt, .held(let episode)) = events[0] else { Issue.record("\(events[0])"); return }
        #expect(episode.startMicroseconds == t(125))
        #expect(episode.firstSeenMicroseconds == t(150))
        // 375 - 125 >= 250: held at the look at 400 ms, with the 6 sightings so far.
        #expect(heldAt == 400 && episode.samples.count == 6)
        // Sampled at 450 and 500; not seen at 550.
        #expect(events[1...2].map(\.0) == [450, 500])
        #expect(events[1...2].allSatisfy { if case .sampled(7, _) = $0.1 { true } else { false } })
        guard case (550, .ended(7, let end)) = events[3] else { Issue.record("\(events[3])"); return }
        #expect(end == t(525))
    }

    /// An idle worker beside a pool whose width is taken is no room: libdispatch keeps more workers
    /// than the width (the one that ran the last probe, say) and lets only that many run jobs. Two
    /// jobs held on a pool of width 2 with a third worker idle: no held job (a starvation's jobs,
    /// CI's three reports for one starvation); the same looks on a pool of width 3: held.
    @Test func anIdleWorkerBesideAPoolWhoseWidthIsTakenIsNoRoom() {
        let third = MonitoredThread(tid: 9, startTimeTicks: 100, stackLow: 0, stackHigh: 1, name: "oot.default-qos", isMain: false)
        let jobB = JobActivation(function: 0x2000, context: 0xb000, taskContext: 0xb100)
        func held(width: Int) -> [Int32] {
            var tracker = HeldJobTracker(probedPoolWidth: width)
            var events: [HeldJobTracker.Event] = []
            for ms in stride(from: UInt64(0), through: 700, by: 50) {
                let looks = [look(worker, jobA, at: ms), look(other, jobB, at: ms), look(third, nil, at: ms)]
                events += tracker.observe(looks, at: t(ms), thresholdMicroseconds: Self.threshold)
            }
            return events.compactMap { if case .held(let episode) = $0 { episode.thread.tid } else { nil } }
        }
        #expect(held(width: 2).isEmpty, "\(held(width: 2))")
        #expect(Set(held(width: 3)) == [7, 8])
    }

    @Test func withoutItsTaskIdAThreadThatRanBetweenTwoLooksOrComputesIsNotProvenToStayInOneJob() {
        var tracker = HeldJobTracker()
        // Same activation at every look, but the thread had CPU time between them (its blocking
        // call was read afresh): it may be another task reusing the first one's memory.
        var events: [HeldJobTracker.Event] = []
        for ms in stride(from: UInt64(0), through: 700, by: 50) {
            var job = look(worker, jobA, at: ms)
            job.sample.method = .syscall
            events += tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold)
        }
        #expect(events.isEmpty)
        // On a CPU: never followed.
        for ms in stride(from: UInt64(750), through: 1_500, by: 50) {
            var job = look(worker, jobA, at: ms)
            job.sample = ScriptedSampler.computing()
            events += tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold)
        }
        #expect(events.isEmpty && tracker.episodes.isEmpty)
    }

    /// The task's id proves one task ran all along: a job that computes (or moves from one blocking
    /// call to the next) is followed, and a run of short tasks with the same code and reused memory
    /// (the same contexts) is not, because each has its own id.
    @Test func withItsTaskIdAJobThatComputesIsFollowedAndShortTasksAreEachTheirOwn() throws {
        func computing(_ id: UInt64, at ms: UInt64) -> HeldJobTracker.Look {
            var job = look(worker, JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: id), at: ms)
            job.sample = ScriptedSampler.computing()
            job.sample.microseconds = t(ms)
            return job
        }
        var tracker = HeldJobTracker()
        var events: [(UInt64, HeldJobTracker.Event)] = []
        // Task 41 computes from 120 to 530 ms.
        for ms in stride(from: UInt64(0), through: 700, by: 50) {
            let job = (120..<530).contains(ms) ? computing(41, at: ms) : look(worker, nil, at: ms)
            events += tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold).map { (ms, $0) }
        }
        try #require(events.count == 4, "\(events.map(\.1))")
        guard case (400, .held(let episode)) = events[0] else { Issue.record("\(events[0])"); return }
        #expect(episode.startMicroseconds == t(125) && episode.activation.taskID == 41)
        guard case (550, .ended(7, let end)) = events[3] else { Issue.record("\(events[3])"); return }
        #expect(end == t(525))

        // A new task at every look, same code and contexts: nothing.
        tracker = HeldJobTracker()
        var short: [HeldJobTracker.Event] = []
        for ms in stride(from: UInt64(0), through: 1_000, by: 50) {
            short += tracker.observe([computing(100 + ms, at: ms), look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold)
        }
        #expect(short.isEmpty, "\(short)")
    }

    /// A thread on a CPU is captured only in a task the look before saw it in: a job's first
    /// sighting on a CPU holds its task, time and count, no stack (`firstSightingOnCPU`). The job
    /// is followed from its second sighting, and dated from its first, as if captured then.
    @Test func aJobOnACPUIsCapturedFromItsSecondSightingAndDatedFromItsFirst() throws {
        /// Task `id` on a CPU at `ms`: first sightings uncaptured, later ones captured.
        func onCPU(_ id: UInt64, switches: UInt64, at ms: UInt64, captured: Bool) -> HeldJobTracker.Look {
            var job = look(worker, captured ? JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: id) : nil, at: ms)
            job.sample = captured ? ScriptedSampler.computing() : ScriptedSampler.failed(.firstSightingOnCPU)
            job.sample.state = "R"
            job.sample.microseconds = t(ms)
            job.sample.taskID = id
            job.sample.voluntarySwitches = switches
            return job
        }
        /// Task 41 computes from 120 to 530 ms, first seen (uncaptured) at 150; the thread's count
        /// is `switches(ms)`; the other pool thread is idle. The held job's start and first sighting.
        func held(task: (UInt64) -> UInt64 = { _ in 41 }, switches: (UInt64) -> UInt64 = { _ in 10 }) -> (start: UInt64, firstSeen: UInt64)? {
            var tracker = HeldJobTracker()
            var found: (UInt64, UInt64)?
            for ms in stride(from: UInt64(0), through: 700, by: 50) {
                let job = (120..<530).contains(ms) ? onCPU(task(ms), switches: switches(ms), at: ms, captured: ms > 150) : look(worker, nil, at: ms)
                for case .held(let episode) in tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold) {
                    found = (episode.startMicroseconds, episode.firstSeenMicroseconds)
                }
            }
            return found
        }
        let dated = try #require(held())
        #expect(dated.start == t(125) && dated.firstSeen == t(150), "\(dated)")
        // Slept between the two sightings: the first proves nothing about the job seen at the
        // second (it began after the sleep), which is dated from the second.
        let slept = try #require(held(switches: { $0 <= 150 ? 10 : 11 }))
        #expect(slept.start == t(175) && slept.firstSeen == t(200), "\(slept)")
        // Another task at the first sighting: likewise.
        let otherTask = try #require(held(task: { $0 <= 150 ? 40 : 41 }))
        #expect(otherTask.start == t(175) && otherTask.firstSeen == t(200), "\(otherTask)")

        // An uncaptured sighting in another task ends a held job, half-way since its last sighting.
        var tracker = HeldJobTracker()
        var ended: [(UInt64, UInt64)] = []
        for ms in stride(from: UInt64(0), through: 600, by: 50) {
            let job = ms < 450 ? onCPU(41, switches: 10, at: ms, captured: ms > 0) : onCPU(42, switches: 10, at: ms, captured: false)
            for case .ended(_, let end) in tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold) {
                ended.append((ms, end))
            }
        }
        #expect(ended.count == 1 && ended.first?.0 == 450 && ended.first?.1 == t(425), "\(ended)")
    }

    /// A look that reads no job on a thread that runs on (a capture stopped short of the job's
    /// function, at a program counter without unwind information) does not end the job when it read
    /// the same task's id and the thread has not slept since: seen beside a busy CPU, such a look cut
    /// a 300 ms request in two pieces under the threshold, and the hang was lost. The look dates the
    /// job and is no sample of it; without the task's id, in another task, or after a sleep, the
    /// job ended there as before.
    @Test func aLookThatReadsNoJobOnTheSameTaskAwakeKeepsTheJob() throws {
        /// Task 41 computes from 120 to 530 ms; the look at 300 ms stops short of its function and
        /// reads task `unreadTask` with `unreadSwitches`. Held starts, ends, and the near misses.
        func run(unreadTask: UInt64?, unreadSwitches: UInt64 = 10, uncaptured: Bool = false)
            -> (held: [(UInt64, Int)], ended: [UInt64], sampledAt: [UInt64], missed: [HeldJobTracker.PassedOver])
        {
            var tracker = HeldJobTracker()
            var result: (held: [(UInt64, Int)], ended: [UInt64], sampledAt: [UInt64], missed: [HeldJobTracker.PassedOver]) = ([], [], [], [])
            for ms in stride(from: UInt64(0), through: 700, by: 50) {
                var job = look(worker, nil, at: ms)
                if (120..<530).contains(ms) {
                    let unread = ms == 300
                    job = look(worker, unread ? nil : JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: 41), at: ms)
                    job.sample = unread && uncaptured ? ScriptedSampler.failed(.firstSightingOnCPU)
                        : unread ? ScriptedSampler.computing([0x7777]) : ScriptedSampler.computing()
                    job.sample.state = "R"
                    job.sample.truncated = unread && !uncaptured
                    job.sample.microseconds = t(ms)
                    job.sample.taskID = unread ? unreadTask : 41
                    job.sample.voluntarySwitches = unread ? unreadSwitches : (ms > 300 ? unreadSwitches : 10)
                }
                for event in tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold) {
                    switch event {
                    case .held(let episode): result.held.append((episode.startMicroseconds, episode.samples.count))
                    case .ended(_, let end): result.ended.append(end)
                    case .sampled: result.sampledAt.append(ms)
                    }
                }
                result.missed += tracker.takePassedOver()
            }
            return result
        }
        // The same task, awake: one job, 125 to 525 ms, held at 400 with the five sightings that
        // read it (150 to 400 less the one at 300), sampled at 450 and 500.
        let kept = run(unreadTask: 41)
        #expect(kept.held.map(\.0) == [t(125)] && kept.held.first?.1 == 5, "\(kept.held)")
        #expect(kept.ended == [t(525)] && kept.sampledAt == [450, 500] && kept.missed.isEmpty, "\(kept)")
        // Uncaptured (a first sighting on a CPU) in the same task, awake: the same.
        let uncaptured = run(unreadTask: 41, uncaptured: true)
        #expect(uncaptured.held.map(\.0) == [t(125)] && uncaptured.ended == [t(525)], "\(uncaptured)")
        // No task read: the job ended half-way before the look (125 to 275 ms, a near miss), and the
        // one seen from 350 ms on is another (325 to 525, under the threshold too).
        let noTask = run(unreadTask: nil)
        #expect(noTask.held.isEmpty && noTask.missed.map(\.endedBy) == ["no job read", "no job"], "\(noTask)")
        #expect(noTask.missed.first.map { [$0.startMicroseconds, $0.endMicroseconds] } == [t(125), t(275)], "\(noTask.missed)")
        // Another task, or the thread slept since: likewise ended there.
        #expect(run(unreadTask: 42).missed.first?.endedBy == "another task")
        #expect(run(unreadTask: 41, unreadSwitches: 11).missed.first?.endedBy == "slept")
    }

    /// Requests on a kept-alive connection run one after the other in one task, with the same code
    /// (and reused memory): only the thread parking between them (its voluntary context switches
    /// move) tells them apart. Seen with Hummingbird 2 under wrk: two 300 ms requests read as one
    /// 600 ms hang before. A thread still in the same blocking call, not run since, holds its job.
    @Test func theSameTaskOnAThreadThatSleptInBetweenIsANewJobUnlessStillInTheSameCall() throws {
        let activation = JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: 41)
        // Three 300 ms requests computing back to back, the thread parking between them (each
        // request's count one more), looks every 50 ms from 0 ms.
        func computing(at ms: UInt64) -> HeldJobTracker.Look {
            var job = look(worker, activation, at: ms)
            job.sample = ScriptedSampler.computing()
            job.sample.microseconds = t(ms)
            job.sample.voluntarySwitches = 10 + ms / 300
            return job
        }
        var tracker = HeldJobTracker()
        var held: [UInt64] = []
        var ended: [UInt64] = []
        for ms in stride(from: UInt64(0), through: 1_000, by: 50) {
            let job = ms < 900 ? computing(at: ms) : look(worker, nil, at: ms)
            for event in tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold) {
                switch event {
                case .held(let episode): held.append(episode.startMicroseconds)
                case .ended(_, let end): ended.append(end)
                case .sampled: break
                }
            }
        }
        #expect(held == [t(0), t(275), t(575)], "\(held)")
        #expect(ended == [t(275), t(575), t(875)], "\(ended)")

        // One blocking call that never returned (not run since): held all along, whatever the count said before.
        tracker = HeldJobTracker()
        var blockedEvents: [HeldJobTracker.Event] = []
        for ms in stride(from: UInt64(0), through: 700, by: 50) {
            var job = look(worker, activation, at: ms)
            job.sample.syscall = 35
            job.sample.method = ms == 0 ? .syscall : .unchanged
            job.sample.voluntarySwitches = 10
            blockedEvents += tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold)
        }
        #expect(blockedEvents.filter { if case .held = $0 { true } else { false } }.count == 1)
    }

    /// A computing job on a thread that was asleep in no job at the look before: since it woke,
    /// every nanosecond is CPU or run-queue time, so `schedstat` dates the start exactly; likewise
    /// the end, when the thread parks once right after. (Half-way between looks, each would be off
    /// by up to 25 ms.)
    @Test func aComputingJobIsDatedByTheThreadsCPUAndRunQueueTime() throws {
        let activation = JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: 41)
        // Awake (CPU or run queue) from 118 ms to 470 ms; asleep before and after.
        func awake(until ms: UInt64) -> UInt64 { (min(max(ms, 118), 470) - 118) * 1_000_000 }
        func sample(at ms: UInt64) -> StackSample {
            var sample = (118..<470).contains(ms) ? ScriptedSampler.computing() : StackSample(microseconds: 0, frames: [0x10], method: .unchanged, truncated: false, state: "S")
            sample.microseconds = t(ms)
            sample.state = (118..<470).contains(ms) ? "R" : "S"
            // 5 ms of the awake time waiting for a CPU, the rest on one.
            let total = awake(until: ms)
            sample.runQueueNanoseconds = 5_000_000 + min(total, 5_000_000)
            sample.onCPUNanoseconds = 900_000_000 + total - min(total, 5_000_000)
            sample.voluntarySwitches = ms < 470 ? 10 : 11
            return sample
        }
        var tracker = HeldJobTracker()
        var held: [UInt64] = []
        var ended: [UInt64] = []
        for ms in stride(from: UInt64(0), through: 600, by: 50) {
            var job = look(worker, (118..<470).contains(ms) ? activation : nil, at: ms)
            job.sample = sample(at: ms)
            for event in tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold) {
                switch event {
                case .held(let episode): held.append(episode.startMicroseconds)
                case .ended(_, let end): ended.append(end)
                case .sampled: break
                }
            }
        }
        #expect(held == [t(118)], "\(held)")
        #expect(ended == [t(470)], "\(ended)")
    }

    /// A blocked job on a thread that was asleep in no job at the look before: it woke for the job,
    /// ran 3 ms (CPU and run-queue time), and fell asleep in its blocking call at a time the
    /// scheduler's clock gives: the start is exact. It wakes at 425 ms, runs 2 ms more and parks at
    /// 427 ms, again by the scheduler's clock: the end is exact. (Half-way between looks, each
    /// would be off by up to 25 ms.)
    @Test func aBlockedJobIsDatedByTheSchedulersClockWhereTheThreadWentToSleep() throws {
        let activation = JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: 41)
        // Asleep (idle) until 118; awake 118-121 (3 ms: 1 of them waiting for a CPU); asleep in the
        // job's call 121-425; awake 425-427; parked (idle) from 427.
        func sample(at ms: UInt64) -> StackSample {
            let inJob = (118..<427).contains(ms)
            var sample = StackSample(microseconds: t(ms), frames: [0x10], method: .syscall, truncated: false, state: "S", syscall: 230)
            let awake: UInt64 = ms < 118 ? 0 : ms < 121 ? ms - 118 : ms < 425 ? 3 : ms < 427 ? 3 + ms - 425 : 5
            sample.runQueueNanoseconds = 7_000_000 + (awake > 0 ? 1_000_000 : 0)
            sample.onCPUNanoseconds = 900_000_000 + awake * 1_000_000 - (awake > 0 ? 1_000_000 : 0)
            sample.voluntarySwitches = ms < 121 ? 10 : ms < 427 ? 11 : 12
            if inJob { sample.offCPUSinceMicroseconds = t(121) }
            if ms >= 427 { sample.offCPUSinceMicroseconds = t(427) }
            return sample
        }
        var tracker = HeldJobTracker()
        var held: [UInt64] = []
        var ended: [UInt64] = []
        for ms in stride(from: UInt64(0), through: 600, by: 50) {
            var job = look(worker, (118..<427).contains(ms) ? activation : nil, at: ms)
            job.sample = sample(at: ms)
            if (150..<427).contains(ms) && ms > 150 { job.sample.method = .unchanged }
            for event in tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold) {
                switch event {
                case .held(let episode): held.append(episode.startMicroseconds)
                case .ended(_, let end): ended.append(end)
                case .sampled: break
                }
            }
        }
        #expect(held == [t(118)], "\(held.map { Double($0) / 1000 - 1000 })")
        #expect(ended == [t(427)], "\(ended.map { Double($0) / 1000 - 1000 })")
    }

    /// The held jobs' starts and ends when `sample(ms)` (with `job(ms)` its activation) is what
    /// each look every 50 ms from 0 finds on the worker; another pool thread idle throughout.
    func heldEdges(until: UInt64 = 900, job: (UInt64) -> JobActivation?, sample: (UInt64) -> StackSample) -> (held: [UInt64], ended: [UInt64]) {
        var tracker = HeldJobTracker()
        var held: [UInt64] = []
        var ended: [UInt64] = []
        for ms in stride(from: UInt64(0), through: until, by: 50) {
            var found = look(worker, job(ms), at: ms)
            found.sample = sample(ms)
            for event in tracker.observe([found, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold) {
                switch event {
                case .held(let episode): held.append(episode.startMicroseconds)
                case .ended(_, let end): ended.append(end)
                case .sampled: break
                }
            }
        }
        return (held, ended)
    }

    /// A look at a thread asleep (in a job's call or idle) at `ms`: its voluntary switches, its
    /// time awake since 0 ms (on a CPU and waiting for one, µs), and when it went off its CPU.
    func blockedSample(at ms: UInt64, switches: UInt64, awakeMicroseconds: UInt64, offCPU: UInt64?, method: StackSample.Method = .syscall) -> StackSample {
        var sample = StackSample(microseconds: t(ms), frames: [0x10], method: method, truncated: false, state: "S", syscall: 0)
        sample.runQueueNanoseconds = 7_000_000
        sample.onCPUNanoseconds = 900_000_000 + awakeMicroseconds * 1000
        sample.voluntarySwitches = switches
        sample.offCPUSinceMicroseconds = offCPU
        return sample
    }

    /// The first request of a fresh connection: between the look that found its thread idle and
    /// the one that finds the request asleep in its call, the thread woke and parked once more
    /// (the connection's task waited for the request), then woke for the job and ran 0.5 ms before
    /// its call. The job began within its last 1 ms awake (all it was awake since) before it fell
    /// asleep, dated half-way in that: off by 0.5 ms at most, where half-way between the looks was
    /// off by 5 ms here (and up to 25).
    @Test func aBlockedJobWhoseThreadParkedAndWokeAgainFirstIsDatedWithinItsAwakeTime() {
        let activation = JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: 41)
        // Idle until 104; awake 104–104.5; parked; awake 130–130.5 (the job), asleep in its call
        // 130.5–430; awake 430–430.5, parked from 430.5.
        let edges = heldEdges(job: { (130..<430).contains($0) ? activation : nil }) { ms in
            if ms < 104 { return blockedSample(at: ms, switches: 10, awakeMicroseconds: 0, offCPU: nil) }
            if ms < 430 { return blockedSample(at: ms, switches: 12, awakeMicroseconds: 1_000, offCPU: t(130) + 500, method: ms == 150 ? .syscall : .unchanged) }
            return blockedSample(at: ms, switches: 13, awakeMicroseconds: 1_500, offCPU: t(430) + 500)
        }
        #expect(edges.held == [t(130)], "\(edges.held.map { Double($0) / 1000 - 1000 })")
        #expect(edges.ended == [t(430) + 500], "\(edges.ended.map { Double($0) / 1000 - 1000 })")
    }

    /// The look before found the thread on a CPU in the job's own task, not captured (a first
    /// sighting on a CPU): the job may have begun before that look or after, and began before its
    /// thread fell asleep in its call, 1 ms later: dated half-way between that look and the sleep,
    /// not half-way between the looks (125 ms).
    @Test func aBlockedJobFirstSeenOnACPUInItsTaskIsDatedBetweenThatLookAndItsSleep() {
        let activation = JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: 41)
        let edges = heldEdges(job: { (100..<430).contains($0) && $0 > 100 ? activation : nil }) { ms in
            if ms < 100 { return blockedSample(at: ms, switches: 10, awakeMicroseconds: 0, offCPU: nil) }
            if ms == 100 {
                var onCPU = ScriptedSampler.failed(.firstSightingOnCPU)
                onCPU.microseconds = t(100)
                onCPU.state = "R"
                onCPU.taskID = 41
                onCPU.voluntarySwitches = 10
                return onCPU
            }
            if ms < 430 { return blockedSample(at: ms, switches: 11, awakeMicroseconds: 1_000, offCPU: t(101), method: ms == 150 ? .syscall : .unchanged) }
            return blockedSample(at: ms, switches: 12, awakeMicroseconds: 1_500, offCPU: t(430) + 500)
        }
        #expect(edges.held == [t(100) + 500], "\(edges.held.map { Double($0) / 1000 - 1000 })")
    }

    /// After the last sighting of a blocked job, its thread woke (the call returned), parked, woke
    /// and parked again before the next look (a Hummingbird request: its response written, then
    /// the next request awaited). It was awake 1 ms in all, so the call returned by 1 ms before it
    /// last went to sleep: the end is half-way between the last sighting and then (405.25), never
    /// after it, where half-way between the looks (425) was after the whole of it.
    @Test func aBlockedJobWhoseThreadSleptTwiceAfterItEndsBeforeTheLatestItsAwakeTimeAllows() {
        let activation = JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: 41)
        // As the exact case's: idle until 118, awake 118–121, asleep in the call 121–410; then
        // awake 410–410.5, parked, awake 411–411.5, parked from 411.5.
        let edges = heldEdges(job: { (118..<410).contains($0) ? activation : nil }) { ms in
            if ms < 118 { return blockedSample(at: ms, switches: 10, awakeMicroseconds: 0, offCPU: nil) }
            if ms < 410 { return blockedSample(at: ms, switches: 11, awakeMicroseconds: 3_000, offCPU: t(121), method: ms == 150 ? .syscall : .unchanged) }
            return blockedSample(at: ms, switches: 13, awakeMicroseconds: 4_000, offCPU: t(411) + 500)
        }
        #expect(edges.held == [t(118)], "\(edges.held.map { Double($0) / 1000 - 1000 })")
        #expect(edges.ended == [t(405) + 250], "\(edges.ended.map { Double($0) / 1000 - 1000 })")
    }

    /// Requests on a kept-alive connection, the next one begun before any look saw the thread
    /// idle: the thread woke once out of the first request's call, ran 2 ms (that request's last
    /// steps, then the next one's first) and fell asleep once, in the next request's call. Both
    /// edges are that wake: the first request ends, and the next begins, exactly then (half-way
    /// between the looks, 425, each was up to 25 ms off).
    @Test func aBlockedRequestFollowedAtOnceByTheNextEndsAndTheNextBeginsAtTheWake() {
        let activation = JobActivation(function: 0x1000, context: 0xa000, taskContext: 0xa100, taskID: 41)
        // Idle until 118, awake 118–121, asleep in the first call 121–410, awake 410–412, asleep
        // in the next call 412–712, awake 712–713, parked from 713.
        let edges = heldEdges(job: { (118..<713).contains($0) ? activation : nil }) { ms in
            if ms < 118 { return blockedSample(at: ms, switches: 10, awakeMicroseconds: 0, offCPU: nil) }
            if ms < 410 { return blockedSample(at: ms, switches: 11, awakeMicroseconds: 3_000, offCPU: t(121), method: ms == 150 ? .syscall : .unchanged) }
            if ms < 712 { return blockedSample(at: ms, switches: 12, awakeMicroseconds: 5_000, offCPU: t(412), method: ms == 450 ? .syscall : .unchanged) }
            return blockedSample(at: ms, switches: 13, awakeMicroseconds: 6_000, offCPU: t(713))
        }
        #expect(edges.held == [t(118), t(410)], "\(edges.held.map { Double($0) / 1000 - 1000 })")
        #expect(edges.ended == [t(410), t(713)], "\(edges.ended.map { Double($0) / 1000 - 1000 })")
    }

    /// A job that ends between two looks before any look saw it past the threshold, but whose end
    /// is a threshold after its start, is a hang all the same: held and ended at once.
    @Test func aJobWhoseEndComesPastTheThresholdBetweenTwoLooksIsReportedAtTheEnd() throws {
        var tracker = HeldJobTracker()
        // Blocked from 20 to 290 ms: seen at 50 ... 250 (start 25, last sighting 250: 225 ms), gone at 300 (end 275).
        let events = run(&tracker, until: 400) { (20..<290).contains($0) ? jobA : nil }
        try #require(events.count == 2, "\(events.map(\.1))")
        guard case (300, .held(let episode)) = events[0], case (300, .ended(7, let end)) = events[1] else {
            Issue.record("\(events)")
            return
        }
        #expect(episode.startMicroseconds == t(25) && end == t(275))
        #expect(episode.samples.count == 5)
    }

    /// The labels of a job found held only at its end are those its sightings read, not those in
    /// effect when the end was seen: the next request of a kept-alive connection runs in the same
    /// task, with labels of its own (seen in a real Hummingbird service: the first report of a
    /// route had none, its request's labels gone by the look that found the end).
    @Test func aJobReportedAtItsEndKeepsTheLabelsItsSightingsRead() throws {
        var tracker = HeldJobTracker()
        let first = [["route": "GET /cart"]]
        let next = [["route": "GET /quote"]]
        let jobB = JobActivation(function: 0x2000, context: 0xb000, taskContext: 0xb100)
        var events: [HeldJobTracker.Event] = []
        for ms in stride(from: UInt64(0), through: 400, by: 50) {
            // Blocked from 20 to 290 ms under `first`; from 300 on, the next job, under `next`.
            var job = look(worker, (20..<290).contains(ms) ? jobA : ms >= 300 ? jobB : nil, at: ms)
            job.labels = (20..<290).contains(ms) ? first : ms >= 300 ? next : []
            events += tracker.observe([job, look(other, nil, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold)
        }
        let held = events.compactMap { if case .held(let episode) = $0 { episode } else { nil } }
        try #require(held.count == 1, "\(events)")
        #expect(held[0].labels == first)
    }

    /// Each thread is dated by its own sample, not by the end of the round: the looks at a
    /// round's threads are taken one after the other, and a capture may wait for its thread.
    @Test func aJobIsDatedByItsThreadsOwnSamplesNotByTheEndOfTheRound() throws {
        var tracker = HeldJobTracker()
        var events: [HeldJobTracker.Event] = []
        // Blocked from 120 to 530 ms. Each round ends 40 ms after the worker's sample (another
        // thread's capture waited that long).
        for ms in stride(from: UInt64(0), through: 700, by: 50) {
            let looks = [look(worker, (120..<530).contains(ms) ? jobA : nil, at: ms), look(other, nil, at: ms + 40)]
            events += tracker.observe(looks, at: t(ms + 40), thresholdMicroseconds: Self.threshold)
        }
        try #require(events.count == 4, "\(events)")
        guard case .held(let episode) = events[0], case .ended(7, let end) = events[3] else { Issue.record("\(events)"); return }
        // As if every look were on time: half-way between 100 and 150, and between 500 and 550.
        #expect(episode.startMicroseconds == t(125) && episode.firstSeenMicroseconds == t(150))
        #expect(end == t(525))
    }

    /// A job seen for half a threshold or more that gets no report is kept with why, for the
    /// watch's debug log; shorter ones are not.
    @Test func aNearMissIsKeptWithWhyItWasNoHang() throws {
        var tracker = HeldJobTracker()
        // Blocked from 120 to 330 ms (read 125 to 325: 200 ms), then from 400 to 480 (80 ms).
        _ = run(&tracker, until: 700) { (120..<330).contains($0) || (400..<480).contains($0) ? jobA : nil }
        let missed = tracker.takePassedOver()
        #expect(
            missed == [
                HeldJobTracker.PassedOver(
                    tid: 7, startMicroseconds: t(125), endMicroseconds: t(325), sightings: 4, reason: .underThreshold, endedBy: "no job")
            ], "\(missed)")
        #expect(tracker.takePassedOver().isEmpty)

        // Held long enough, but the pool never showed room (every thread busy, no probe started).
        let jobB = JobActivation(function: 0x2000, context: 0xc000, taskContext: 0xc100)
        for ms in stride(from: UInt64(800), through: 1_200, by: 50) {
            _ = tracker.observe(
                [look(worker, ms < 1_150 ? jobA : jobB, at: ms), look(other, jobB, at: ms)], at: t(ms),
                thresholdMicroseconds: Self.threshold)
        }
        let noRoom = tracker.takePassedOver()
        #expect(noRoom.map(\.reason) == [.noRoom] && noRoom.first?.endedBy == "another activation", "\(noRoom)")
    }

    @Test func aJobShorterThanTheThresholdIsNothing() {
        var tracker = HeldJobTracker()
        #expect(run(&tracker, until: 700) { (100..<300).contains($0) ? jobA : nil }.isEmpty)
    }

    @Test func jobsFollowingEachOtherOnOneThreadAreEachTheirOwn() {
        var tracker = HeldJobTracker()
        // Three 200 ms jobs back to back: the same function, each with its own context.
        let events = run(&tracker, until: 800) { ms in
            ms < 600 ? JobActivation(function: 0x1000, context: 0xa000 + UInt(ms / 200) * 0x100, taskContext: 0xb000 + UInt(ms / 200) * 0x100) : nil
        }
        #expect(events.isEmpty, "\(events.map(\.1))")
    }

    @Test func aJobHeldWhileEveryPoolThreadIsBusyWaitsForRoomAndIsCoveredByAStarvation() throws {
        var tracker = HeldJobTracker()
        // Both threads busy with one job each from 0 ms, no idle thread and no probe started: never held.
        let jobB = JobActivation(function: 0x2000, context: 0xc000, taskContext: 0xc100)
        for ms in stride(from: UInt64(0), through: 500, by: 50) {
            let events = tracker.observe(
                [look(worker, jobA, at: ms), look(other, jobB, at: ms)], at: t(ms), thresholdMicroseconds: Self.threshold,
                startedProbeEnqueuedMicroseconds: t(0) - 10_000)
            #expect(events.isEmpty)
        }
        // A probe enqueued after they were first seen (at 520) that started shows room: both are
        // held at the next look...
        var fresh = tracker
        let held = fresh.observe(
            [look(worker, jobA, at: 550), look(other, jobB, at: 550)], at: t(550), thresholdMicroseconds: Self.threshold,
            startedProbeEnqueuedMicroseconds: t(520))
        #expect(held.count == 2)
        // ...unless a starvation report took them.
        tracker.coverUnheld()
        let covered = tracker.observe(
            [look(worker, jobA, at: 550), look(other, jobB, at: 550)], at: t(550), thresholdMicroseconds: Self.threshold,
            startedProbeEnqueuedMicroseconds: t(520))
        #expect(covered.isEmpty)
    }

    /// A `.high` task's worker (the user-initiated pool) is not probed: its job is held without room
    /// being shown, a starvation of the default pool does not cover it, and its idle worker is no
    /// room for a job of the default pool.
    @Test func aJobInAnotherPrioritysPoolIsHeldWithoutRoomAndIsNoStarvationsOwn() throws {
        let high = MonitoredThread(tid: 9, startTimeTicks: 100, stackLow: 0, stackHigh: 1, name: "r-initiated-qos", isMain: false)
        let idleHigh = MonitoredThread(tid: 10, startTimeTicks: 100, stackLow: 0, stackHigh: 1, name: "r-initiated-qos", isMain: false)
        let jobB = JobActivation(function: 0x2000, context: 0xc000, taskContext: 0xc100)
        /// The threads held in 500 ms, with a starvation reported at 100 ms or not.
        func held(starvationAt100: Bool) -> [Int32] {
            var tracker = HeldJobTracker()
            var held: [Int32] = []
            for ms in stride(from: UInt64(0), through: 500, by: 50) {
                // Both default-pool workers busy (no room there), the high pool's job and idle worker beside them.
                let looks = [look(worker, jobA, at: ms), look(other, jobB, at: ms), look(high, jobA, at: ms), look(idleHigh, nil, at: ms)]
                for event in tracker.observe(looks, at: t(ms), thresholdMicroseconds: Self.threshold, startedProbeEnqueuedMicroseconds: t(0) - 10_000) {
                    if case .held(let episode) = event { held.append(episode.thread.tid) }
                }
                if starvationAt100 && ms == 100 { tracker.coverUnheld() }
            }
            return held
        }
        #expect(held(starvationAt100: false) == [9], "the idle high-pool worker is no room for the default pool's jobs")
        #expect(held(starvationAt100: true) == [9], "the default pool's starvation does not cover the high pool's job")
        #expect(CooperativePool(threadName: "r-initiated-qos") == .userInitiated && CooperativePool.userInitiated.priority == .high)
        #expect(CooperativePool(threadName: "-qos.overcommit") == nil && CooperativePool.allCases.filter(\.isProbed) == [.default])
    }

    @Test func aThreadNamedLikeThePoolButNoWorkerOfItIsNoRoom() {
        var tracker = HeldJobTracker()
        // A thread a job started (named like the pool's workers) sleeps beside the held job.
        for ms in stride(from: UInt64(0), through: 500, by: 50) {
            var bystander = look(other, nil, at: ms)
            bystander.isWorker = false
            #expect(tracker.observe([look(worker, jobA, at: ms), bystander], at: t(ms), thresholdMicroseconds: Self.threshold).isEmpty)
        }
        // Once seen in a job, a thread is a worker: idle, it is room.
        let jobB = JobActivation(function: 0x2000, context: 0xc000, taskContext: 0xc100)
        var bystander = look(other, jobB, at: 550)
        bystander.isWorker = false
        _ = tracker.observe([look(worker, jobA, at: 550), bystander], at: t(550), thresholdMicroseconds: Self.threshold)
        bystander = look(other, nil, at: 600)
        bystander.isWorker = false
        let events = tracker.observe([look(worker, jobA, at: 600), bystander], at: t(600), thresholdMicroseconds: Self.threshold)
        #expect(events.count == 1, "\(events)")
    }

    @Test func aThreadThatGoesAwayOrIsReplacedEndsItsJob() throws {
        var tracker = HeldJobTracker()
        _ = run(&tracker, until: 400) { _ in jobA }
        // The same tid, a new thread (another start time), same-looking job: the old one ended.
        var replaced = worker
        replaced.startTimeTicks = 200
        let events = tracker.observe([look(replaced, jobA, at: 450), look(other, nil, at: 450)], at: t(450), thresholdMicroseconds: Self.threshold)
        guard case .ended(7, let end)? = events.first else { Issue.record("\(events)"); return }
        #expect(end == t(425))
        // Gone altogether.
        _ = run(&tracker, until: 800, from: 500) { _ in jobA }
        let gone = tracker.observe([look(other, nil, at: 850)], at: t(850), thresholdMicroseconds: Self.threshold)
        guard case .ended(7, let goneEnd)? = gone.first else { Issue.record("\(gone)"); return }
        #expect(goneEnd == t(825))
    }

    @Test func stoppingEndsHeldJobsAtTheirLastSighting() {
        var tracker = HeldJobTracker()
        _ = run(&tracker, until: 400) { _ in jobA }
        let events = tracker.stop()
        guard case .ended(7, let end)? = events.first else { Issue.record("\(events)"); return }
        #expect(end == t(400) && events.count == 1 && tracker.episodes.isEmpty)
    }

    @Test func anActivationIsTheRuntimeCalledFunctionAndItsContexts() throws {
        var sample = ScriptedSampler.computing([0x1234, 0x5000, 0x6000])
        sample.asyncCallers = AsyncCallers(after: 1, resumeAddresses: [0x7000], end: .complete, contexts: (0xa0, 0xb0))
        let activation = try #require(JobActivation(sample, functionStart: { $0 >= 0x4000 && $0 < 0x5100 ? 0x4f00 : nil }))
        // frames[1] is a return address: its function is looked up from the byte before.
        #expect(activation == JobActivation(function: 0x4f00, context: 0xa0, taskContext: 0xb0))
        // No contexts read, or a function not in the tables: no activation.
        sample.asyncCallers?.contexts = nil
        #expect(JobActivation(sample, functionStart: { _ in 0x4f00 }) == nil)
        sample.asyncCallers?.contexts = (0xa0, 0xb0)
        #expect(JobActivation(sample, functionStart: { _ in nil }) == nil)
    }
}
