@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// Takes the looks `HeldJobTracker` decides from: every pool thread's stack, now. Runs on the pool
/// watch's thread only.
protocol PoolThreadLooking: AnyObject {
    /// One look at every pool thread alive now. `isWorker`: the thread ran a probe job (it is a
    /// worker of the pool, not a thread named like one because a job started it).
    func look() -> [(thread: MonitoredThread, sample: StackSample, isWorker: Bool)]
}

/// Looks at the real pools (the workers of every priority's pool, `CooperativePool`), cheaply
/// when nothing moved: the thread list is read again only when it may have changed
/// (`ProcessThreadList`), thread names and stack bounds are learnt once per thread, each thread
/// keeps its open `/proc` files, and a thread not put on a CPU since the last look (an idle worker
/// in its wait) costs one read of its `schedstat`. A thread on a CPU is captured by signal, prepared
/// for it first when no probe or attach job attached it (`ThreadPreparer`). Every pool thread gives
/// the id of the task it runs (`withTask`): an attached one by the word it found itself, any other
/// by its thread descriptor (`UnsafeThreadDescriptor`).
final class LinuxPoolThreadLooker: PoolThreadLooking, @unchecked Sendable {
    /// One thread of the process, learnt once. A class: a look updates it in place.
    private final class Known {
        let isPool: Bool
        var thread: MonitoredThread
        var attached = false
        /// Where the thread's current task is kept (`UnsafeCurrentTaskSlot`), when found.
        var taskSlot: UInt?
        var sampler: LinuxStackSampler?
        var previous: StackSample?
        /// Its stack mapping was looked up in `/proc/self/maps` (once: the file is long).
        var stackLookedUp = false

        init(isPool: Bool, thread: MonitoredThread) {
            self.isPool = isPool
            self.thread = thread
        }
    }

    private let inspection: ThreadInspection
    private let signal: Int32
    private let maxFrames: Int
    private let timeoutNanoseconds: Int64
    private let attachments: UnsafePoolThreadAttachments
    private var known: [Int32: Known] = [:]
    /// The thread ids of the last look, and the pool threads among them in that order.
    private var lastThreadIDs: [Int32] = []
    private var poolThreads: [(tid: Int32, known: Known)] = []
    /// Threads first seen under a name of no pool, by tid, with the looks left to read their name
    /// again: a worker libdispatch just made has its creator's name until it starts its first job
    /// (seen beside a busy CPU: a fresh worker learnt a moment early was never looked at, and the
    /// job it ran got no report).
    private var unnamed: [Int32: Int] = [:]
    /// How many looks a thread's name is read again for (about two seconds of looks).
    static let nameRechecks = 40
    private let threadList = ProcessThreadList()
    /// When a sleeping thread went off its CPU: read for a thread asleep in a job (the start of
    /// its blocking call) or asleep just after one (the job's end).
    private let schedClock = SchedClock()

    init(
        inspection: ThreadInspection, signal: Int32, maxFrames: Int, timeoutNanoseconds: Int64,
        attachments: UnsafePoolThreadAttachments = .shared
    ) {
        self.inspection = inspection
        self.signal = signal
        self.maxFrames = maxFrames
        self.timeoutNanoseconds = timeoutNanoseconds
        self.attachments = attachments
    }

    func look() -> [(thread: MonitoredThread, sample: StackSample, isWorker: Bool)] {
        let tids = threadList.threadIDs()
        if tids != lastThreadIDs { learn(tids) }
        if !unnamed.isEmpty { recheckNames() }
        var looks: [(thread: MonitoredThread, sample: StackSample, isWorker: Bool)] = []
        looks.reserveCapacity(poolThreads.count)
        var stackMappings: [StackMapping]?
        for (tid, entry) in poolThreads {
            if !entry.attached, let attached = attachments.thread(tid: tid, startTimeTicks: entry.thread.startTimeTicks) {
                entry.thread = attached.thread
                entry.taskSlot = attached.taskSlot
                entry.attached = true
                entry.previous = nil
            }
            if !entry.attached, !entry.stackLookedUp {
                entry.stackLookedUp = StackMapping.boundBlockedThread(&entry.thread, mappings: &stackMappings)
            }
            let sampler = entry.sampler
                ?? inspection.sampler(signal: signal, maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds)
            entry.sampler = sampler
            // A thread not attached (libdispatch's mask blocks the capture signal, it has no
            // alternate stack) is prepared for the capture by the sampler, behind its guard.
            var sample = Self.withTask(sampler, entry.thread, previous: entry.previous, signalAllowed: true, slot: entry.taskSlot)
            if sample.state == "S", sample.method != .unchanged, sample.asyncCallers != nil || entry.previous?.asyncCallers != nil {
                sample.offCPUSinceMicroseconds = schedClock.offCPUSince(tid: tid)
            }
            entry.previous = sample
            looks.append((entry.thread, sample, entry.attached))
        }
        return looks
    }

    /// One sample of `thread`, with the id of the task it ran all through the sample when its
    /// current-task word is known (`slot`), and its voluntary context switches after the sample.
    /// The word is read before and after the stack, through the kernel (two system calls), except
    /// where the thread cannot have changed task: a thread still blocked as at the look before
    /// keeps that look's task and count, unread (an idle worker costs nothing more), and one that
    /// was blocked then and is blocked now is read after the stack only.
    ///
    /// A thread on a CPU is captured only in the task the look before found it in: a job's second
    /// sighting. At its first (another task, or none) the sample holds the task's id, the thread's
    /// times and its count, and no stack (`firstSightingOnCPU`): under a load of short jobs almost
    /// every look finds a worker in another task, and a job too short to be seen twice can never be
    /// held, so the capture and its guard are spent only on jobs that lasted from one look to the
    /// next. `HeldJobTracker` dates such a job from its first sighting all the same.
    static func withTask(
        _ sampler: LinuxStackSampler, _ thread: MonitoredThread, previous: StackSample?, signalAllowed: Bool, slot: UInt?
    ) -> StackSample {
        guard let slot else { return sampler.sample(thread, previous: previous, signalAllowed: signalAllowed) }
        let wasBlocked = previous?.method == .unchanged || previous?.method == .syscall
        var before = wasBlocked ? nil : UnsafeCurrentTaskSlot.taskID(slot: slot)
        var sample = sampler.sample(thread, previous: previous, signalAllowed: signalAllowed) {
            if wasBlocked { before = UnsafeCurrentTaskSlot.taskID(slot: slot) }
            guard let task = before, task != 0 else { return false }
            return task == previous?.taskID
        }
        if sample.method == .unchanged {
            // Not on a CPU since: the same task, and it cannot have gone to sleep again.
            sample.taskID = previous?.taskID
            sample.voluntarySwitches = previous?.voluntarySwitches
            return sample
        }
        if sample.failure == .firstSightingOnCPU {
            sample.taskID = before == 0 ? nil : before
            sample.voluntarySwitches = sampler.voluntarySwitches(of: thread)
            return sample
        }
        let after = UnsafeCurrentTaskSlot.taskID(slot: slot)
        sample.voluntarySwitches = sampler.voluntarySwitches(of: thread)
        let ranOneTask = after != nil && after != 0 && (before == nil ? wasBlocked && sample.method == .syscall : before == after)
        sample.taskID = ranOneTask ? after : nil
        return sample
    }

    /// The threads changed: forget those gone, learn the new ones' names (once per thread).
    private func learn(_ tids: [Int32]) {
        lastThreadIDs = tids
        let alive = Set(tids)
        known = known.filter { alive.contains($0.key) }
        poolThreads = []
        unnamed = unnamed.filter { alive.contains($0.key) }
        for tid in tids {
            let entry: Known
            if let existing = known[tid] {
                entry = existing
            } else {
                entry = Self.learnt(tid)
                known[tid] = entry
                if !entry.isPool { unnamed[tid] = Self.nameRechecks }
            }
            if entry.isPool { poolThreads.append((tid, entry)) }
        }
        findTaskSlots()
    }

    /// Thread `tid` by its name now.
    private static func learnt(_ tid: Int32) -> Known {
        let task = ProcTask(tid: tid)
        let name = task.name()
        let isPool = CooperativePool(threadName: name) != nil
        let start = isPool ? task.stat()?.startTimeTicks ?? 0 : 0
        return Known(isPool: isPool, thread: MonitoredThread(tid: tid, startTimeTicks: start, stackLow: 0, stackHigh: 0, name: name, isMain: false))
    }

    /// Reads the names of threads first seen under no pool's name again: one that took a pool's
    /// name since is a pool thread from now on.
    private func recheckNames() {
        var found = false
        for (tid, left) in unnamed {
            let entry = Self.learnt(tid)
            if entry.isPool {
                known[tid] = entry
                poolThreads.append((tid, entry))
                unnamed[tid] = nil
                found = true
            } else {
                unnamed[tid] = left > 1 ? left - 1 : nil
            }
        }
        if found { findTaskSlots() }
    }

    /// The current-task words of pool threads no probe or attach job ran on, from their thread
    /// descriptors (one read of `/proc/self/maps` when such threads appear).
    private func findTaskSlots() {
        let missing = Set(poolThreads.filter { $0.known.taskSlot == nil && !$0.known.attached }.map(\.tid))
        guard !missing.isEmpty, attachments.findsTaskSlots else { return }
        for mapping in StackMapping.readAll() {
            guard let thread = UnsafeThreadDescriptor.thread(mappingEnd: mapping.end), missing.contains(thread.tid),
                let entry = known[thread.tid]
            else { continue }
            entry.taskSlot = attachments.taskSlot(threadPointer: thread.pointer)
        }
    }
}
