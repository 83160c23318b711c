/// Which run of an async function a pool thread is in: the partial function the concurrency
/// runtime called (its start, from the unwind tables), that function's own async context, the
/// last context of its chain (the task's first, when the chain is complete), and the task's id when
/// it was read (`StackSample.taskID`). Read from one look; two looks with the same activation saw
/// the same job still running.
struct JobActivation: Hashable, Sendable {
    var function: UInt
    var context: UInt
    var taskContext: UInt
    /// The task's id: unlike its memory (and so its contexts), never reused by a later task.
    var taskID: UInt64?

    /// The activation of a captured stack; nil when the stack holds no async function called by
    /// the runtime (an idle worker, a capture that failed) or its function is not in the tables.
    init?(_ sample: StackSample, functionStart: (UInt) -> UInt?) {
        guard let callers = sample.asyncCallers, let contexts = callers.contexts, callers.after < sample.frames.count
        else { return nil }
        let address = sample.frames[callers.after]
        // The innermost frame is the exact program counter; the others are return addresses.
        guard let start = functionStart(callers.after == 0 ? address : address &- 1) else { return nil }
        function = start
        context = contexts.first
        taskContext = contexts.last
        taskID = sample.taskID
    }

    init(function: UInt, context: UInt, taskContext: UInt, taskID: UInt64? = nil) {
        self.function = function
        self.context = context
        self.taskContext = taskContext
        self.taskID = taskID
    }
}

/// Decides when one job holds a cooperative-pool thread past the threshold, from looks at every
/// pool thread taken a short interval apart (the pool watch takes them). Pure: times and looks
/// come in as values, so tests script them.
///
/// A thread holds a job while every look finds it in the same `JobActivation`, with proof that no
/// other task ran there in between. Either proof will do:
/// - the task's id, the same before and after each look's capture, and the thread not gone to
///   sleep since the look before unless it is still in the same blocking call (a job that
///   computes, or one that blocks): ids are never reused;
/// - without an id (the thread's task could not be read): the same system call, with no CPU time
///   since the look before (`StackSample.Method.unchanged`): one blocking call that never
///   returned. The activation alone does not tell two tasks apart that run the same code one after
///   the other on one thread (the second task's memory is the first's, reused), so a job that
///   computes is not followed without the id.
/// A look that reads no job on the thread (one on a CPU not captured, or a capture that stopped
/// short of the job's function) keeps the job when it read the same task's id and the thread has
/// not slept since (`unreadChange`): it dates the job, and is no sample of it.
/// The edges are sampled: the job started between the look before it was first seen and that
/// first sighting (a thread on a CPU is captured from a job's second sighting on, but the first,
/// its task and count, dates it: `firstSightings`), and ended between its last sighting and the
/// next look; each edge is put half-way, so either is off by at most half the interval between
/// looks. It is a hang once the time from that start to the last sighting reaches the threshold.
///
/// A task that suspends and is resumed on the same thread in between (the next request on a
/// kept-alive connection: same task, same code) is told apart by the thread's voluntary context
/// switches: a worker with nothing to run parks, so the count moves. Only a thread found in the
/// very same blocking call, not on a CPU since, may have moved it and still hold its job; a job
/// that moves between blocking calls is followed one call at a time.
///
/// What it cannot tell apart: a task that suspends and is resumed on the same thread without the
/// thread parking (`Task.yield()` with nothing else queued) reads as one job (it kept that thread
/// busy all the same).

/// A job in the probed pool (the default one) is reported as held only when that pool had room
/// while the job held its thread: an idle worker of it seen at the same look while fewer of its
/// threads ran jobs than its width (an idle worker beside a full pool is no room: libdispatch
/// keeps more workers than the width, and lets only that many run), or a probe job
/// enqueued after the job was first seen that started (one enqueued before may have been ahead
/// of it in the queue, and its start proves nothing about the pool with this job in it). While
/// every worker is busy, the job may be one of the jobs of a starvation, which gets one report
/// holding every thread (`coverUnheld`). A job in another priority's pool needs no such proof: no
/// starved-pool report ever holds it.
struct HeldJobTracker: Sendable {
    /// One pool thread as a look found it.
    struct Look: Sendable {
        var thread: MonitoredThread
        var sample: StackSample
        var activation: JobActivation?
        /// Known to be a worker of the pool (it ran a probe job); a thread seen in a job is one too.
        var isWorker = false
        /// The labels in effect in the thread's job at this look (`LabelsInEffect`), outermost first.
        var labels: [[String: String]] = []
    }

    /// A job seen on a thread, from its first sighting.
    struct Episode: Sendable {
        var thread: MonitoredThread
        var activation: JobActivation
        /// Half-way between the look before the first sighting and the first sighting.
        var startMicroseconds: UInt64
        var firstSeenMicroseconds: UInt64
        var lastSeenMicroseconds: UInt64
        /// Every sighting's sample, oldest first, until the episode is held (then the watch keeps them).
        var samples: [StackSample]
        /// Held past the threshold (a report is open).
        var held = false
        /// A starved-pool report already holds this job: it gets no report of its own.
        var covered = false
        /// The thread's voluntary context switches at the last sighting, when known.
        var voluntarySwitches: UInt64? = nil
        /// The last sighting's sample (its CPU and run-queue times end a computing job exactly).
        var lastSample: StackSample? = nil
        /// The labels the job had in effect at its latest sighting that saw any: read during the
        /// job, never after it (a job found held only at its end, the next request of its task
        /// may have put its own labels in effect by then).
        var labels: [[String: String]] = []
    }

    enum Event: Sendable {
        /// Held past the threshold: `episode.samples` are every sighting so far.
        case held(Episode)
        /// Still held: one more sample.
        case sampled(tid: Int32, StackSample)
        /// No longer held (another job, idle, gone): ended half-way between its last sighting and now.
        case ended(tid: Int32, endMicroseconds: UInt64)
    }

    /// A job seen for at least half a threshold that got no report, and why: a near miss is
    /// otherwise silent (the pool watch logs them at debug level).
    struct PassedOver: Sendable, Equatable {
        enum Reason: String, Sendable {
            case underThreshold = "under the threshold"
            case noRoom = "no room shown in the pool"
            case covered = "in a starved-pool report"
        }
        var tid: Int32
        var startMicroseconds: UInt64
        var endMicroseconds: UInt64
        var sightings: Int
        var reason: Reason
        /// What the look after its last sighting found on the thread.
        var endedBy: String
    }

    private(set) var episodes: [Int32: Episode] = [:]
    /// Near misses since the last `takePassedOver()` (at most `maxPassedOver`, oldest dropped).
    private(set) var passedOver: [PassedOver] = []
    var maxPassedOver = 32
    /// Threads seen in a job (by tid and start time): workers of the pool.
    private var workers: Set<[UInt64]> = []
    private var previousLookMicroseconds: UInt64?
    /// When the watch last woke from rest: no job seen since began before it.
    private var resumedMicroseconds: UInt64?
    /// Each thread as the last round of looks found it.
    private var lastLooks: [Int32: Look] = [:]
    /// A thread found on a CPU in a task the look before had not seen it in is not captured then
    /// (`StackSample.Failure.firstSightingOnCPU`): what that sighting told, by thread. A job found
    /// in the same task at the next look, the thread not gone to sleep in between, was there at
    /// this sighting and is dated from it, as if it had been captured then. (The count is read
    /// just after the task's id: a job of the same task resumed after a sleep between those two
    /// reads began at this sighting, so it is still dated within half a look gap of its start.)
    private var firstSightings: [Int32: FirstSighting] = [:]
    private struct FirstSighting {
        var startTimeTicks: UInt64
        var taskID: UInt64
        var voluntarySwitches: UInt64
        var seenMicroseconds: UInt64
        var startMicroseconds: UInt64
    }
    /// Bounds the samples kept before a report opens (a long job is sampled on in the report).
    var maxSamplesBeforeHeld = 256
    /// The probed pool's width: the most of its threads that run jobs at once (one per CPU).
    let probedPoolWidth: Int

    /// `probedPoolWidth`: the probed pool's width (`PoolWatch.Settings.poolWidth`); unbounded by
    /// default, where a test needs no width.
    init(probedPoolWidth: Int = .max) {
        self.probedPoolWidth = probedPoolWidth
    }

    /// Takes one round of looks (every pool thread) taken at `now`. `startedProbeEnqueuedMicroseconds`:
    /// when the last probe job that started was enqueued (a job seen running by then held its
    /// thread while the pool still had room for one more).
    mutating func observe(
        _ looks: [Look], at now: UInt64, thresholdMicroseconds: UInt64, startedProbeEnqueuedMicroseconds: UInt64? = nil
    ) -> [Event] {
        let room = roomShown(in: looks, at: now, startedProbeEnqueuedMicroseconds: startedProbeEnqueuedMicroseconds)
        var events: [Event] = []
        var seen = Set<Int32>()
        let previous = previousLookMicroseconds
        previousLookMicroseconds = now
        for look in looks {
            seen.insert(look.thread.tid)
            events += observe(look, round: now, roundBefore: previous, thresholdMicroseconds: thresholdMicroseconds, room: room)
        }
        for tid in episodes.keys where !seen.contains(tid) {
            if let ended = episodes.removeValue(forKey: tid) {
                events += end(ended, now: now, next: nil, endedBy: "thread gone", thresholdMicroseconds: thresholdMicroseconds, room: room)
            }
        }
        lastLooks = lastLooks.filter { seen.contains($0.key) }
        firstSightings = firstSightings.filter { seen.contains($0.key) }
        return events
    }

    /// Learns the pool's workers from `looks` and says when the probed pool last had room: now, if
    /// a worker of it runs no job and its stack was read (a thread a job started is named like the
    /// pool's workers, but is none of them) while fewer of its threads run jobs than its width,
    /// else when the last probe job that started was enqueued.
    private mutating func roomShown(in looks: [Look], at now: UInt64, startedProbeEnqueuedMicroseconds: UInt64?) -> UInt64? {
        for look in looks where look.activation != nil {
            workers.insert([UInt64(look.thread.tid), look.thread.startTimeTicks])
        }
        workers = workers.intersection(looks.map { [UInt64($0.thread.tid), $0.thread.startTimeTicks] })
        let inJobs = looks.count { Self.inProbedPool($0.thread) && $0.activation != nil }
        let idleThreadSeen = inJobs < probedPoolWidth && looks.contains { look in
            Self.inProbedPool(look.thread) && look.activation == nil && look.sample.failure == nil && !look.sample.frames.isEmpty
                && (look.isWorker || workers.contains([UInt64(look.thread.tid), look.thread.startTimeTicks]))
        }
        return idleThreadSeen ? now : startedProbeEnqueuedMicroseconds
    }

    /// One thread's look in the round taken at `now` (`roundBefore`: the round before's time): ends
    /// the job it followed there if this is not that job, keeps a first sighting on a CPU, and
    /// follows the job it finds (or opens an episode for it).
    private mutating func observe(
        _ look: Look, round now: UInt64, roundBefore previous: UInt64?, thresholdMicroseconds: UInt64, room: UInt64?
    ) -> [Event] {
        let tid = look.thread.tid
        var events: [Event] = []
        // This thread's own sighting time: the looks at the threads of one round are taken one
        // after the other, and a capture may wait for its thread to get a CPU.
        let at = Self.sightingTime(look, round: now)
        let before = lastLooks[tid]
        if let episode = episodes[tid], let change = Self.change(episode, look) {
            episodes[tid] = nil
            events += end(episode, now: at, next: look, endedBy: change, thresholdMicroseconds: thresholdMicroseconds, room: room)
        }
        lastLooks[tid] = look
        if var episode = episodes[tid], look.activation == nil || look.sample.failure != nil {
            // Still the job it follows (`change` proved it), though this look did not read it.
            if let event = follow(&episode, look, read: false, at: at, thresholdMicroseconds: thresholdMicroseconds, room: room) {
                events.append(event)
            }
            episodes[tid] = episode
            return events
        }
        // The look before at this thread (of the round before, when it was not looked at).
        let previousSighting = Self.later(before.map { Self.sightingTime($0, round: previous ?? at) } ?? previous, resumedMicroseconds)
        let firstSighting = firstSightings.removeValue(forKey: tid)
        if look.sample.failure == .firstSightingOnCPU {
            if let task = look.sample.taskID, let switches = look.sample.voluntarySwitches {
                firstSightings[tid] = FirstSighting(
                    startTimeTicks: look.thread.startTimeTicks, taskID: task, voluntarySwitches: switches, seenMicroseconds: at,
                    startMicroseconds: Self.start(before: before, first: look, previous: previousSighting, at: at))
            }
            return events
        }
        // Only a job that can be proven to stay on the thread is followed (its task is known, or it is blocked).
        guard let activation = look.activation, activation.taskID != nil || look.sample.syscall != nil, look.sample.failure == nil
        else { return events }
        if var episode = episodes[tid] {
            if let event = follow(&episode, look, read: true, at: at, thresholdMicroseconds: thresholdMicroseconds, room: room) {
                events.append(event)
            }
            episodes[tid] = episode
        } else {
            // Seen first at the look before, on a CPU in this task, and awake since: one job since then.
            let seenBefore = firstSighting.flatMap { first in
                first.startTimeTicks == look.thread.startTimeTicks && first.taskID == activation.taskID
                    && first.voluntarySwitches == look.sample.voluntarySwitches ? first : nil
            }
            episodes[tid] = Episode(
                thread: look.thread, activation: activation,
                startMicroseconds: seenBefore?.startMicroseconds ?? Self.start(before: before, first: look, previous: previousSighting, at: at),
                firstSeenMicroseconds: seenBefore?.seenMicroseconds ?? at,
                lastSeenMicroseconds: at, samples: [look.sample], voluntarySwitches: look.sample.voluntarySwitches,
                lastSample: look.sample, labels: look.labels)
        }
        return events
    }

    /// One more sighting (at `at`) of the job `episode` follows: a sample of its report once held;
    /// before, held (`.held`) once it lasted the threshold, unless a starved-pool report covers it or
    /// its pool has shown no room since it was first seen. A sighting that did not `read` the job
    /// (`unreadChange`) dates it and may hold it, but is no sample of it.
    private func follow(
        _ episode: inout Episode, _ look: Look, read: Bool, at: UInt64, thresholdMicroseconds: UInt64, room: UInt64?
    ) -> Event? {
        episode.lastSeenMicroseconds = at
        episode.voluntarySwitches = look.sample.voluntarySwitches
        episode.lastSample = look.sample
        if !look.labels.isEmpty { episode.labels = look.labels }
        if episode.held { return read ? .sampled(tid: look.thread.tid, look.sample) : nil }
        if read, episode.samples.count < maxSamplesBeforeHeld { episode.samples.append(look.sample) }
        if !episode.covered, at - min(at, episode.startMicroseconds) >= thresholdMicroseconds,
            let room = Self.room(room, for: episode, now: at), room >= episode.firstSeenMicroseconds
        {
            episode.held = true
            return .held(episode)
        }
        return nil
    }

    /// Whether `thread` is a worker of the pool the probe measures (a thread of unknown name, as
    /// scripted tests give, counts as one).
    private static func inProbedPool(_ thread: MonitoredThread) -> Bool {
        CooperativePool(threadName: thread.name)?.isProbed ?? true
    }

    /// When `episode`'s pool last showed room: the probed pool's `room`; another pool's, always
    /// (`now`).
    private static func room(_ room: UInt64?, for episode: Episode, now: UInt64) -> UInt64? {
        inProbedPool(episode.thread) ? room : now
    }

    /// Where a job first seen at `first` (at `at`) began: exactly when its thread woke for it
    /// (`wokeForJob`), or within what its clocks leave of a blocked job (`sleptInJob`), else
    /// half-way between the look before and this one.
    private static func start(before: Look?, first: Look, previous: UInt64?, at: UInt64) -> UInt64 {
        wokeForJob(before: before, first: first, previous: previous) ?? sleptInJob(before: before, first: first, previous: previous)
            ?? previous.map { $0 + (at - min(at, $0)) / 2 } ?? at
    }

    /// A blocked job's start, from when its thread fell asleep in the job's call, at a time the
    /// scheduler's clock gives (`offCPUSinceMicroseconds`): the job began before then, and after
    /// the look before (`previous`), as every start here is taken to. Half-way between the two
    /// (half-way between the two looks, the first request of a fresh connection, whose thread
    /// was on a CPU in its task at the look before, read 12–15 ms short at a threshold of
    /// 100 ms), or closer where the thread's clocks say more. When the look
    /// before proves the job began after it (`beganAfter`), the thread was awake `ran` in all
    /// since (`schedstat`: on a CPU or waiting for one):
    /// - asleep at the look before and gone to sleep once since, in this job's call: it woke
    ///   once, exactly `ran` before it fell asleep, and began the job then (out of its idle wait,
    ///   or out of the call of the job the look before found, whose last steps came first);
    /// - gone to sleep more often (it parked and woke again in between, or ran other jobs): the
    ///   job's code before its call ran within the last `ran` before the sleep, so the job began
    ///   in that window, dated half-way in it: off by at most half of `ran` (its code did not
    ///   sleep before the call; one that did is dated late by that sleep, never before the look
    ///   before).
    /// Nil when the thread was not seen asleep with that time (then half-way between the looks).
    private static func sleptInJob(before: Look?, first: Look, previous: UInt64?) -> UInt64? {
        guard let previous, first.sample.state == "S", let offCPU = first.sample.offCPUSinceMicroseconds else { return nil }
        let seen = first.sample.microseconds == 0 ? offCPU : first.sample.microseconds
        let asleep = min(max(offCPU, previous), max(seen, previous))
        var earliest = previous
        if let before, let job = first.activation, beganAfter(before, job: job), let switches = first.sample.voluntarySwitches,
            let switchesBefore = before.sample.voluntarySwitches, switches > switchesBefore,
            let ran = ranOrRunnable(from: before.sample, to: first.sample)
        {
            earliest = max(previous, asleep &- min(ran, asleep))
            if before.sample.failure == nil, before.sample.state == "S", switches == switchesBefore &+ 1 { return earliest }
        }
        return earliest + (asleep - earliest) / 2
    }

    /// Whether the look `before` proves that `job`, seen after it, began after it: the thread was
    /// asleep then (in no job, or in a blocking call it has left since: it went to sleep again,
    /// which the caller checks), or it ran no job or another one (another task, another
    /// activation; a first sighting on a CPU, not captured, by its task's id).
    private static func beganAfter(_ before: Look, job: JobActivation) -> Bool {
        switch before.sample.failure {
        case nil:
            if before.sample.state == "S" { return true }
            guard let earlier = before.activation else { return true }
            if let task = earlier.taskID, let jobTask = job.taskID, task != jobTask { return true }
            return earlier.function != job.function || earlier.context != job.context || earlier.taskContext != job.taskContext
        case .firstSightingOnCPU?:
            guard let task = before.sample.taskID, let jobTask = job.taskID else { return false }
            return task != jobTask
        default:
            return false
        }
    }

    /// The later of two times, either of which may be unknown.
    private static func later(_ a: UInt64?, _ b: UInt64?) -> UInt64? {
        guard let a else { return b }
        guard let b else { return a }
        return max(a, b)
    }

    /// When a look saw its thread: the sample's own time (taken as that thread's look began),
    /// never after the round's.
    private static func sightingTime(_ look: Look, round: UInt64) -> UInt64 {
        look.sample.microseconds == 0 ? round : min(look.sample.microseconds, round)
    }

    /// Why `look` is not the job `episode` follows (nil: it is): another job or none, a new thread
    /// under the tid, no proof the same task stayed, or the thread slept in between.
    private static func change(_ episode: Episode, _ look: Look) -> String? {
        if episode.thread.startTimeTicks != look.thread.startTimeTicks { return "another thread" }
        if look.sample.failure == .firstSightingOnCPU { return unreadChange(episode, look) }
        if let failure = look.sample.failure { return "look failed: \(failure.rawValue)" }
        guard let activation = look.activation else { return unreadChange(episode, look) }
        if activation != episode.activation {
            return activation.taskID != episode.activation.taskID ? "another task" : "another activation"
        }
        if activation.taskID == nil, look.sample.method != .unchanged { return "ran, no task id" }
        if slept(episode, look.sample) { return "slept" }
        return nil
    }

    /// Why a look that read no job on the thread ends `episode` (nil: it does not): a thread on a CPU
    /// not captured (`firstSightingOnCPU`: its task is read, no stack), or a stack without the
    /// job's function (a capture stopped short: a program counter without unwind information, seen
    /// once in about ten runs of a computing request beside a busy CPU, cut a 300 ms job in two
    /// under the threshold). Such a look still proves the job when it read the same task's id
    /// (before and after a capture) and the thread has not slept since the job's last sighting:
    /// one task, awake all along, is one job here as at any sighting (`slept`). Otherwise the job
    /// ended: no task, another, or a sleep in between.
    private static func unreadChange(_ episode: Episode, _ look: Look) -> String? {
        guard let task = look.sample.taskID else { return look.sample.state == "R" ? "no job read" : "no job" }
        if task != episode.activation.taskID { return "another task" }
        if slept(episode, look.sample) { return "slept" }
        return nil
    }

    /// When the thread of `sample` was last awake: the sample's time when it was on a CPU, when it
    /// went off its CPU when it was asleep (the scheduler's clock, where read); nil otherwise.
    private static func lastAwake(_ sample: StackSample) -> UInt64? {
        switch sample.state {
        case "R": sample.microseconds
        case "S": sample.offCPUSinceMicroseconds
        default: nil
        }
    }

    /// The thread's time on a CPU or waiting for one between two samples, microseconds: all of the
    /// time between them for a thread that never slept.
    private static func ranOrRunnable(from earlier: StackSample, to later: StackSample) -> UInt64? {
        guard let cpu0 = earlier.onCPUNanoseconds, let queue0 = earlier.runQueueNanoseconds,
            let cpu1 = later.onCPUNanoseconds, let queue1 = later.runQueueNanoseconds, cpu1 &+ queue1 >= cpu0 &+ queue0
        else { return nil }
        return (cpu1 &+ queue1 &- cpu0 &- queue0) / 1000
    }

    /// A computing job's exact start: the look before found the thread asleep (parked in no job, or
    /// in a blocking call that this job's code came out of), and since then it woke once and never
    /// slept (same count of voluntary switches), so every nanosecond since it woke is CPU or
    /// run-queue time (`schedstat`): it woke that long ago, and this began then (or short jobs
    /// before it did, which this may count in). Nil otherwise (a blocked job: its wait is in
    /// neither count).
    private static func wokeForJob(before: Look?, first: Look, previous: UInt64?) -> UInt64? {
        guard let before, let previous, before.sample.failure == nil, before.sample.state == "S",
            first.sample.state == "R", let switches = first.sample.voluntarySwitches, before.sample.voluntarySwitches == switches,
            let ran = ranOrRunnable(from: before.sample, to: first.sample)
        else { return nil }
        return max(previous, first.sample.microseconds &- min(ran, first.sample.microseconds))
    }

    /// The watch rested (no looks) and woke at `microseconds`: nothing seen from now began
    /// earlier. (The looks before the rest stay: they found each thread asleep, which dates a
    /// computing job exactly.)
    mutating func resume(at microseconds: UInt64) {
        resumedMicroseconds = microseconds
        firstSightings = [:]
        previousLookMicroseconds = microseconds
    }

    /// The near misses since the last call, oldest first.
    mutating func takePassedOver() -> [PassedOver] {
        defer { passedOver = [] }
        return passedOver
    }

    /// A starved pool was reported with every pool thread: the jobs seen now in that pool and not
    /// yet held are in that report and get none of their own (a job already held keeps its
    /// report; one in another priority's pool is in no such report).
    mutating func coverUnheld() {
        for (tid, episode) in episodes where !episode.held && Self.inProbedPool(episode.thread) {
            episodes[tid]?.covered = true
        }
    }

    /// The looks stopped (the watch stops): every held job ends at its last sighting.
    mutating func stop() -> [Event] {
        defer { episodes = [:] }
        return episodes.values.filter(\.held).map { .ended(tid: $0.thread.tid, endMicroseconds: $0.lastSeenMicroseconds) }
    }

    /// The thread went to sleep since the episode's last sighting (its count of voluntary context
    /// switches moved) and is not still in the blocking call it was seen in: the task may have
    /// suspended and been resumed on this thread in between, a new job (the next request on a
    /// kept-alive connection runs in the same task and the same code). Not proven one job.
    private static func slept(_ episode: Episode, _ sample: StackSample) -> Bool {
        guard sample.method != .unchanged, let before = episode.voluntarySwitches, let now = sample.voluntarySwitches else {
            return false
        }
        return now != before
    }

    /// The end of `episode`, no longer seen at `now`: half-way between its last sighting and now,
    /// or from the thread's CPU and run-queue time (`schedstat`) where it never slept in between
    /// but once: a job last seen computing on a thread now parked ends its last sighting plus that
    /// time (the rest of the job, and any short job after it); a job last seen blocked on a thread
    /// now on a CPU that never slept again ended when the thread woke (now minus that time). A
    /// blocked job whose thread slept again since ended no later than that time before the
    /// thread was last awake: then, when it slept once, in another job's call; else half-way
    /// between its last sighting and then. (Half-way between the looks, a request whose thread
    /// parked twice after it, waiting for its response to be written and then for the next
    /// request, read 9–13 ms long at a threshold of 100 ms.)
    ///
    /// A job that was never seen past the threshold but whose end, so found, is a threshold or more
    /// after its start was a hang all the same (it ended between two looks): it is reported now,
    /// held and ended at once, with the samples of its sightings.
    private mutating func end(
        _ episode: Episode, now: UInt64, next: Look?, endedBy: String, thresholdMicroseconds: UInt64, room: UInt64?
    ) -> [Event] {
        let last = episode.lastSeenMicroseconds
        var end = last + (now - min(now, last)) / 2
        if let next, let lastSample = episode.lastSample, let switches = next.sample.voluntarySwitches,
            let before = episode.voluntarySwitches, let ran = Self.ranOrRunnable(from: lastSample, to: next.sample)
        {
            if lastSample.state == "R", next.activation == nil, next.sample.state == "S", switches == before &+ 1 {
                // Computing, then parked once: it ran (or waited for a CPU) every nanosecond until then.
                end = min(now, last &+ ran)
            } else if lastSample.state == "S", next.sample.state == "R", switches == before {
                // Blocked, then woken once and on a CPU since (its next step): the call returned at the wake.
                end = max(last, next.sample.microseconds &- min(ran, next.sample.microseconds))
            } else if lastSample.state == "S", next.activation == nil, next.sample.state == "S", switches == before &+ 1,
                let parked = next.sample.offCPUSinceMicroseconds, parked >= last, parked <= now
            {
                // Blocked, woken once, and parked once since, at a time the scheduler's clock gives:
                // the job finished by then, its last steps (`ran`) just before.
                end = parked
            } else if lastSample.state == "S", switches > before, let awake = Self.lastAwake(next.sample).map({ min(max($0, last), now) }) {
                // Blocked, then woken: the call returned at the thread's first wake since, and the
                // thread has been awake `ran` in all since then, up to `awake`: it returned no later
                // than `ran` before that. Woken once and asleep again in another job's call: exactly
                // then. Woken and asleep more often: between the last sighting and then, half-way.
                let latest = max(last, awake &- min(ran, awake))
                end = next.sample.state == "S" && switches == before &+ 1 ? latest : last + (latest - last) / 2
            }
        }
        if episode.held { return [.ended(tid: episode.thread.tid, endMicroseconds: end)] }
        let lasted = end &- min(end, episode.startMicroseconds)
        let reason: PassedOver.Reason? =
            episode.covered ? .covered
            : lasted < thresholdMicroseconds ? .underThreshold
            : Self.room(room, for: episode, now: now).map { $0 >= episode.firstSeenMicroseconds } != true ? .noRoom : nil
        if let reason {
            if lasted >= thresholdMicroseconds / 2 {
                if passedOver.count >= maxPassedOver { passedOver.removeFirst() }
                passedOver.append(
                    PassedOver(
                        tid: episode.thread.tid, startMicroseconds: episode.startMicroseconds, endMicroseconds: end,
                        sightings: episode.samples.count, reason: reason, endedBy: endedBy))
            }
            return []
        }
        var held = episode
        held.held = true
        return [.held(held), .ended(tid: episode.thread.tid, endMicroseconds: end)]
    }
}
