#if canImport(Glibc)
import Glibc
#endif

/// Looks at the thread that drains a pinged queue (`QueueEdges`' observations), through `/proc`.
/// Used under the source's lock: by the pinging thread, and by each ping's answer on the worker
/// that ran it.
protocol QueueThreadLooking: AnyObject {
    /// Whether the draining thread's idle wait is known (the looks can tell idle from busy
    /// without the workers' current-queue words).
    var knowsIdleWait: Bool { get }
    /// What the queue's threads are doing at `now` (coarse ns). `words`: the threads that ran a
    /// ping with the address of their libdispatch current-queue word, and `queue` the queue as
    /// those words hold it (nil: not known, and the last draining thread is looked at instead).
    func look(at now: UInt64, words: [QueueActivitySource.DrainSlot], queue: UInt?) -> QueueEdges.Observation
    /// A ping is about to be enqueued (the thread's state now is a candidate idle wait).
    func pingSent(at now: UInt64)
    /// The ping enqueued at `enqueuedAt` ran on thread `tid` at `now` (coarse ns; `answeredAt`: the
    /// same moment on `CLOCK_MONOTONIC`). Called on that thread, inside the ping.
    func pingAnswered(by tid: Int32, enqueuedAt: UInt64, at now: UInt64, answeredAt: UInt64)
    /// The thread the last look found running the queue (or that ran the last ping); nil when
    /// none is known.
    var runningThread: Int32? { get }
}

extension QueueThreadLooking {
    var runningThread: Int32? { nil }
}

/// The real looker. The draining thread is the one that ran the last ping. Its idle wait is learnt,
/// not assumed (a libdispatch worker waits on its pool's futex, a thread running `RunLoop.main`
/// in `epoll_wait`): the system call and first argument the draining thread was blocked in when a
/// ping was sent, where the ping ran within `learnWithinNanoseconds` (on that thread or another
/// worker), twice in a row (a block's own blocking call would have held the ping back).
///
/// Each look reads the thread's CPU clock (one system call); only when the thread ran since the
/// last look are its `schedstat` and `syscall` read too. A thread found running that has not gone
/// to sleep since it was seen in its idle wait (its voluntary context switches, in `status`, did
/// not move; being preempted does not count) has been on a CPU or its run queue ever since it was
/// woken: its work began that much CPU and run-queue time ago. One found asleep in the work's
/// blocking call was awake from then until it went off its CPU, which the scheduler's clock dates
/// (`SchedClock`).
final class LinuxQueueThreadLooker: QueueThreadLooking {
    private struct Wait: Equatable {
        let number: Int
        let firstArgument: UInt
    }

    private let learnWithinNanoseconds: UInt64
    /// The thread that ran the last ping, and its open `/proc` files (opened by the pinging
    /// thread at its next look, not by the queue's thread).
    private var drainingThread: Int32?
    private var files: ProcTaskFiles?
    private var idleWait: Wait?
    /// The candidate idle wait seen at the last ping sent, and one confirmed once.
    private var candidate: Wait?
    private var confirmedOnce: Wait?
    /// The thread's `schedstat` and the observation at the last look.
    private var lastSchedule: ProcTask.SchedStat?
    private var lastCPU: UInt64?
    private var lastObservation = QueueEdges.Observation.unknown
    /// The thread at the last look that found it in its idle wait: when, its CPU and run-queue
    /// time, how often it had gone to sleep (read again only when it ran since).
    private var idleBaseline: (at: UInt64, ran: UInt64, voluntarySwitches: UInt64?)?
    /// When a worker asleep in a job's blocking call went off its CPU.
    private let schedClock = SchedClock()

    init(learnWithinNanoseconds: UInt64 = 2_000_000) {
        self.learnWithinNanoseconds = learnWithinNanoseconds
    }

    var knowsIdleWait: Bool { idleWait != nil }

    var runningThread: Int32? { drainingThread ?? files?.tid }

    func look(at now: UInt64, words: [QueueActivitySource.DrainSlot], queue: UInt?) -> QueueEdges.Observation {
        if let queue, !words.isEmpty { return lookAtWorkers(words, queue: queue, now: now) }
        openFiles()
        guard let files else { return .unknown }
        // The thread's CPU clock first: one system call, where `schedstat` goes through a seq
        // file (three times the cost here). Unchanged, the thread has not run since the last look.
        let cpu = Self.cpuNanoseconds(of: files.tid)
        if let cpu, cpu == lastCPU, lastSchedule != nil {
            // Not on a CPU since the last look: as it was then (a computation's start stays dated
            // by that look).
            if case .working = lastObservation { return .working(since: nil) }
            return lastObservation
        }
        lastCPU = cpu
        guard let schedule = files.readSchedStat() else {
            // The thread is gone (its files read nothing): forget them, so that a thread given
            // the same id later is opened anew.
            recentFiles.removeAll { $0 === files }
            self.files = nil
            lastObservation = .unknown
            return .unknown
        }
        lastSchedule = schedule
        let observation = observe(files.readSyscall(), schedule, now: now)
        lastObservation = observation
        return observation
    }

    private func observe(_ state: ProcTask.SyscallState?, _ schedule: ProcTask.SchedStat, now: UInt64) -> QueueEdges.Observation {
        let ran = schedule.runnableNanoseconds
        switch state {
        case nil:
            return .unknown
        case .inSyscall(let number, let arguments, _, _)?:
            if let idleWait, idleWait == Wait(number: number, firstArgument: arguments.first ?? 0) {
                idleBaseline = (now, ran, files?.readVoluntarySwitches())
                return .waiting
            }
            return idleWait == nil ? .unknown : .working(since: nil)
        case .blockedOutsideSyscall?:
            return idleWait == nil ? .unknown : .working(since: nil)
        case .running?:
            guard idleWait != nil else { return .unknown }
            guard let idleBaseline, let sleeps = idleBaseline.voluntarySwitches, files?.readVoluntarySwitches() == sleeps,
                ran >= idleBaseline.ran, now >= ran &- idleBaseline.ran
            else { return .working(since: nil) }
            return .working(since: now &- (ran &- idleBaseline.ran))
        }
    }

    // MARK: - Looks through the workers' current-queue words

    /// What the last look saw of a thread that ran a ping.
    private final class Worker {
        let tid: Int32
        let slot: UInt
        let files: ProcTaskFiles?
        var lastCPU: UInt64?
        var runsQueue = false
        /// The thread at the last look that found it not running the queue, or at the last ping
        /// it answered (`pingAnswered`): when, its CPU and run-queue time, its voluntary switches,
        /// and whether it was idle then (asleep, or in the ping: between the queue's blocks).
        var baseline: (at: UInt64, ran: UInt64, voluntarySwitches: UInt64?, asleep: Bool)?
        /// Pings it answered since that baseline: each may have been followed by one sleep (the
        /// worker back in its idle wait) before the work a later look finds it running.
        var answersSinceBaseline = 0

        init(_ word: QueueActivitySource.DrainSlot) {
            tid = word.tid
            slot = word.slot
            files = ProcTaskFiles(tid: word.tid)
        }
    }

    /// The look state of each thread in the source's list (kept in step with it at each look).
    private var workers: [Int32: Worker] = [:]
    /// Baselines taken at the answers of workers the looks have not taken in yet (the first pings
    /// after the start run before the first look), by tid: a worker's first look starts from its
    /// last answer. A few at most, and before the looks go through the workers' words (where
    /// they never do, another libdispatch's layout), the first few answers only.
    private var answeredBaselines: [(tid: Int32, baseline: (at: UInt64, ran: UInt64, voluntarySwitches: UInt64?, asleep: Bool))] = []
    private var looksThroughWords = false
    private var answersBeforeWords = 0
    /// When the looks through the workers' words last ran (the coarse clock).
    private var lastLookAt: UInt64?
    /// When the last ping was answered (`CLOCK_MONOTONIC`): work the queue runs after it began
    /// after it (the queue is serial: the ping ran between the jobs before it and those after).
    private var lastAnswerAt: UInt64?

    /// The queue is busy exactly when one of the threads that ran a ping has it as its current
    /// queue: the word says so directly, whichever of them libdispatch gave the work to. A thread
    /// not on a CPU since the last look is as it was then (one clock read); one that ran has its
    /// word read, and its `schedstat` when it is not running the queue (the baseline that dates a
    /// later start). A thread found running the queue that was asleep at that baseline and has
    /// not gone to sleep since has been on a CPU or its run queue ever since it was woken: the
    /// work began that much CPU and run-queue time ago. Otherwise half-way between the looks.
    private func lookAtWorkers(_ words: [QueueActivitySource.DrainSlot], queue: UInt, now: UInt64) -> QueueEdges.Observation {
        looksThroughWords = true
        // The latest moment the work found now cannot have begun before: the look before, or
        // the last ping's answer where that is later (before the first look, the only bound:
        // a job on a worker that never answered a ping, right after the start, was dated
        // half-way between the looks, 23 and 28 ms early in 2 of 10 runs, 2026-12-07).
        let lookBefore = [lastLookAt, lastAnswerAt].compactMap { $0 }.max()
        lastLookAt = now
        if words.count != workers.count || words.contains(where: { workers[$0.tid]?.slot != $0.slot }) {
            // The source's list changed: keep what was seen of threads still in it.
            var kept: [Int32: Worker] = [:]
            for word in words {
                if let known = workers[word.tid], known.slot == word.slot {
                    kept[word.tid] = known
                } else {
                    let worker = Worker(word)
                    if let answered = answeredBaselines.lastIndex(where: { $0.tid == word.tid }) {
                        worker.baseline = answeredBaselines[answered].baseline
                        worker.answersSinceBaseline = 1
                    }
                    kept[word.tid] = worker
                }
            }
            workers = kept
        }
        var running: (worker: Worker, since: UInt64?)?
        for word in words {
            guard let worker = workers[word.tid] else { continue }
            let cpu = Self.cpuNanoseconds(of: worker.tid)
            guard let cpu else {
                worker.runsQueue = false
                continue
            }
            if cpu == worker.lastCPU {
                if worker.runsQueue { running = (worker, nil) }
                continue
            }
            worker.lastCPU = cpu
            guard let files = worker.files, let word = UnsafeCurrentQueueSlot.queue(slot: worker.slot) else {
                worker.runsQueue = false
                continue
            }
            let wasRunning = worker.runsQueue
            worker.runsQueue = word == queue
            guard let schedule = files.readSchedStat() else { continue }
            let ran = schedule.runnableNanoseconds
            if !worker.runsQueue {
                var asleep = false
                if case .inSyscall? = files.readSyscall() { asleep = true }
                worker.baseline = (now, ran, files.readVoluntarySwitches(), asleep)
                worker.answersSinceBaseline = 0
                continue
            }
            // The start from the clock that read `ran`'s moment, not the look's coarse one (up
            // to a tick, 4 ms, behind: the start would be that much early); never after this
            // moment.
            let fineNow = UnsafeClock.monotonicNanoseconds()
            running = (worker, wasRunning ? nil : start(of: worker, files: files, ran: ran, now: fineNow, lookBefore: lookBefore))
        }
        guard let running else { return .waiting }
        drainingThread = running.worker.tid
        return .working(since: running.since)
    }

    /// When a worker found running the queue began, where its clock proves it (`provenStart`):
    /// on a CPU, or asleep in a system call (the work blocked) since it went off its CPU, when the
    /// scheduler's clock says.
    ///
    /// A worker never seen out of the queue's work (one libdispatch gave its first job of the
    /// queue, found by its word at this look) has no baseline. Its awake time since it was made
    /// (`ran`) then bounds the work's code, where all of it fits after the look before or the last
    /// ping's answer, the later (`lookBefore`): a worker woken for its first job that fell asleep in its call at once is
    /// dated within that awake time (a fraction of a millisecond), not half-way between the looks
    /// (a 400 ms MainActor job read 11–23 ms long). One awake longer proves nothing.
    private func start(of worker: Worker, files: ProcTaskFiles, ran: UInt64, now: UInt64, lookBefore: UInt64?) -> UInt64? {
        let state = files.readSyscall()
        guard let switches = files.readVoluntarySwitches() else { return nil }
        let baseline = worker.baseline.map { ($0.at, $0.ran, $0.voluntarySwitches, $0.asleep) }
        let window = { (lastAwake: UInt64) in baseline ?? Self.sinceMade(lookBefore: lookBefore, ran: ran, lastAwake: lastAwake) }
        switch state {
        case .running?:
            return Self.provenStart(baseline: baseline, switches: switches, answers: worker.answersSinceBaseline, ran: ran, now: now)
                ?? Self.startWithinAwakeTime(baseline: window(now), ran: ran, lastAwake: now)
        case .inSyscall?:
            guard let asleep = schedClock.offCPUSince(tid: worker.tid).map({ min($0 &* 1000, now) }) else { return nil }
            return Self.provenStart(
                baseline: baseline, switches: switches, answers: worker.answersSinceBaseline, ran: ran, now: now, asleepSince: asleep)
                ?? Self.startWithinAwakeTime(baseline: window(asleep), ran: ran, lastAwake: asleep)
        default:
            return nil
        }
    }

    /// The baseline of a worker with none (`start(of:)`): the look before, with nothing run yet,
    /// where the worker's whole awake time `ran` fits between it and `lastAwake`; nil otherwise.
    static func sinceMade(lookBefore: UInt64?, ran: UInt64, lastAwake: UInt64) -> (at: UInt64, ran: UInt64, voluntarySwitches: UInt64?, asleep: Bool)? {
        guard let lookBefore, lastAwake >= lookBefore, ran <= lastAwake - lookBefore else { return nil }
        return (at: lookBefore, ran: 0, voluntarySwitches: nil, asleep: false)
    }

    /// Where the worker slept more often than `provenStart` allows since its baseline: the work
    /// began after the baseline, and its code ran (unless it slept before `lastAwake`) within the
    /// worker's awake time since then, the last `ran` before `lastAwake` (when it went off its CPU
    /// in the work's call, or the look): half-way in what both leave, off by at most half of
    /// it. A worker just made sleeps a few times between its first pings and its first work (a
    /// 400 ms MainActor job 50 ms after the start read 8–27 ms long, half-way between the looks,
    /// where this window was under a millisecond wide).
    static func startWithinAwakeTime(
        baseline: (at: UInt64, ran: UInt64, voluntarySwitches: UInt64?, asleep: Bool)?, ran: UInt64, lastAwake: UInt64
    ) -> UInt64? {
        guard let baseline, ran >= baseline.ran, lastAwake >= baseline.at else { return nil }
        let earliest = max(baseline.at, lastAwake &- min(ran &- baseline.ran, lastAwake))
        return earliest + (lastAwake - earliest) / 2
    }

    /// When a worker found running the queue at `now` began, where its clock proves it, from what
    /// the look found (`ran`: its CPU and run-queue time; `switches`: how often it has gone to
    /// sleep) and what the last look that found it not running the queue, or the last ping it
    /// answered, did (`baseline`; nil: never). Idle at its baseline and asleep at most once since
    /// besides the sleep after each ping it answered (`answers`), it has been on a CPU or its run
    /// queue ever since it woke for the work, but for that one other wake: the start is `now` less
    /// that time, never before the baseline. With no baseline (found while it ran), never asleep
    /// since it was made (a worker libdispatch started for this work), ever since its start.
    ///
    /// `asleepSince`: the worker is asleep in a system call of the work since then (the
    /// scheduler's clock): it was awake until that moment, not `now`, and that sleep, the work's
    /// own, is one more than the rule above allows. (Half-way between two looks, a blocked start
    /// is up to 25 ms off either way: a 400 ms MainActor job in `usleep`.)
    ///
    /// - A ping it answered and the sleep after it do not break the proof: the work began after
    ///   that answer (the ping would have waited behind it), so at most one sleep per answer came
    ///   before it, and the time counted since the baseline is the work's plus the pings' (a few
    ///   microseconds each).
    /// - One sleep more is the hop a job of an `async` service takes to the queue: the worker woke
    ///   for a timer or another queue's job, enqueued this one, slept, and woke again for it; the
    ///   start is then early by that hop's few microseconds (half-way between two looks, a
    ///   400 ms MainActor computation after a `Task.sleep` read 379–423 ms). Were that sleep
    ///   inside the work instead (a computation that blocked once
    ///   briefly), the start is late by it: within the look interval, as half-way would be, and
    ///   never before the baseline.
    static func provenStart(
        baseline: (at: UInt64, ran: UInt64, voluntarySwitches: UInt64?, asleep: Bool)?, switches: UInt64, answers: Int, ran: UInt64,
        now: UInt64, asleepSince: UInt64? = nil
    ) -> UInt64? {
        if let asleepSince {
            guard switches > 0 else { return nil }
            return provenStart(baseline: baseline, switches: switches - 1, answers: answers, ran: ran, now: min(asleepSince, now))
        }
        guard let baseline else {
            return switches == 0 && now >= ran ? now &- ran : nil
        }
        guard baseline.asleep, let before = baseline.voluntarySwitches, switches >= before,
            switches - before <= UInt64(answers) + 1, ran >= baseline.ran, now >= ran &- baseline.ran
        else { return nil }
        return max(now &- (ran &- baseline.ran), baseline.at)
    }

    /// The files of the last few draining threads (libdispatch may hand a serial queue to two
    /// workers in turn): a thread seen again is not opened again.
    private var recentFiles: [ProcTaskFiles] = []

    /// CPU time of thread `tid` of this process (its `CLOCK_THREAD_CPUTIME` clock, named by the
    /// tid as the kernel encodes it: `~tid << 3 | per-thread | sched`); nil when it is gone.
    static func cpuNanoseconds(of tid: Int32) -> UInt64? {
        var time = timespec()
        let clock = clockid_t((~tid) << 3 | 4 | 2)
        guard clock_gettime(clock, &time) == 0 else { return nil }
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// Switches to the draining thread's files when it changed.
    private func openFiles() {
        guard let drainingThread, files?.tid != drainingThread else { return }
        if let known = recentFiles.firstIndex(where: { $0.tid == drainingThread }) {
            files = recentFiles[known]
        } else {
            files = ProcTaskFiles(tid: drainingThread)
            if let files {
                recentFiles.append(files)
                if recentFiles.count > 4 { recentFiles.removeFirst() }
            }
        }
        lastSchedule = nil
        lastCPU = nil
        lastObservation = .unknown
        idleBaseline = nil
    }

    func pingSent(at now: UInt64) {
        guard idleWait == nil else { return }
        openFiles()
        if case .inSyscall(let number, let arguments, _, _)? = files?.readSyscall() {
            candidate = Wait(number: number, firstArgument: arguments.first ?? 0)
        } else {
            candidate = nil
        }
    }

    /// The answer is the worker's baseline: the queue's work before the ping is over, and
    /// whatever the worker runs of it next began after this. Read here, on the worker itself,
    /// its CPU time on its own clock (`schedstat`'s lags while a thread runs) and its run-queue
    /// time and voluntary switches from its files. A job that follows the last one before any look
    /// finds the worker idle in between (requests served one after the other) is then dated by
    /// the worker's clock like one after an idle look, not half-way between the answer and the
    /// look that found it.
    func pingAnswered(by tid: Int32, enqueuedAt: UInt64, at now: UInt64, answeredAt: UInt64) {
        drainingThread = tid
        lastAnswerAt = max(lastAnswerAt ?? 0, answeredAt)
        let worker = workers[tid]
        if worker == nil, !looksThroughWords { answersBeforeWords += 1 }
        // A worker the looks have not taken in yet: its files opened here (once per new worker).
        let unknownRead = worker == nil && (looksThroughWords || answersBeforeWords <= 8)
        if let files = worker?.files ?? (unknownRead ? ProcTaskFiles(tid: tid) : nil), let queued = files.readSchedStat()?.runQueueNanoseconds,
            let switches = files.readVoluntarySwitches()
        {
            var cpu = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu)
            let onCPU = UInt64(cpu.tv_sec) &* 1_000_000_000 &+ UInt64(cpu.tv_nsec)
            let baseline = (at: answeredAt, ran: onCPU &+ queued, voluntarySwitches: Optional(switches), asleep: true)
            if let worker {
                worker.baseline = baseline
                worker.answersSinceBaseline = 0
                worker.runsQueue = false
            } else {
                answeredBaselines.removeAll { $0.tid == tid }
                answeredBaselines.append((tid, baseline))
                if answeredBaselines.count > 8 { answeredBaselines.removeFirst() }
            }
        }
        worker?.answersSinceBaseline += 1
        guard idleWait == nil else { return }
        guard let candidate, now >= enqueuedAt, now &- enqueuedAt <= learnWithinNanoseconds else {
            confirmedOnce = nil
            return
        }
        if confirmedOnce == candidate {
            idleWait = candidate
            lastSchedule = nil
            lastCPU = nil
        } else {
            confirmedOnce = candidate
        }
        self.candidate = nil
    }
}
