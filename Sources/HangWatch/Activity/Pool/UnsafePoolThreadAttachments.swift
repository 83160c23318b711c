@_spi(Internal) import HangWatchReport
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Pool threads that ran a probe job and were attached there (capture signal unblocked, alternate
/// signal stack, unwinder warmed up), so a pool thread found on a CPU during a starvation can be
/// captured by signal. Pool threads come and go (an idle libdispatch worker exits after 5 s): a
/// thread-specific key's destructor forgets the thread when it exits and frees the alternate stack
/// the attach step gave it (mapped by `hw_capture_thread_attach` with one guard page below it).
/// Unsafe: that destructor unmaps memory by the address the key holds.
final class UnsafePoolThreadAttachments: Sendable {
    static let shared = UnsafePoolThreadAttachments()

    /// An attached thread, and the address of its current-task word when it was found
    /// (`UnsafeCurrentTaskSlot`).
    struct Attached: Sendable {
        var thread: MonitoredThread
        var taskSlot: UInt?
    }

    private let threads = Mutex<[Int32: Attached]>([:])
    /// Where any thread's current-task word is from its thread pointer (x86_64's static TLS lies
    /// below it: a wrapping offset; 0: not learnt yet), learnt on the first thread attached with
    /// its word: every other pool thread's is then found by its thread descriptor
    /// (`UnsafeThreadDescriptor`), no attach job needed.
    private let taskWordOffset = Atomic<UInt>(0)

    /// Holds, per attached thread, the alternate stack the attach step installed (or 1 when the
    /// thread had one already, which is not ours to free).
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { value in UnsafePoolThreadAttachments.threadExiting(value) }
        return key
    }()

    /// The attached pool thread `tid`, if it is still the thread that was attached (same start time).
    func thread(tid: Int32, startTimeTicks: UInt64) -> Attached? {
        threads.withLock { $0[tid] }.flatMap { $0.thread.startTimeTicks == startTimeTicks ? $0 : nil }
    }

    /// Attaches the calling pool thread, once (in a job of a task: its current-task word is looked
    /// for too). Costs a thread-specific read when already attached.
    func attachCurrentThreadIfNeeded(alternateStackSize: Int, signal: Int32) {
        guard pthread_getspecific(Self.key) == nil else { return }
        let attachment = UnsafeCaptureBridge.attachCurrentThread(alternateStackSize: alternateStackSize, signal: signal)
        var marker = UnsafeMutableRawPointer(bitPattern: 1)
        if attachment.installedAlternateStack {
            var current = stack_t()
            if sigaltstack(nil, &current) == 0, let base = current.ss_sp { marker = base }
        }
        pthread_setspecific(Self.key, marker)
        let task = ProcTask(tid: attachment.tid)
        let thread = MonitoredThread(
            tid: attachment.tid, startTimeTicks: task.stat()?.startTimeTicks ?? 0, stackLow: attachment.stackLow,
            stackHigh: attachment.stackHigh, name: task.name(), isMain: false)
        let attached = Attached(thread: thread, taskSlot: UnsafeCurrentTaskSlot.locateOnCurrentThread())
        threads.withLock { $0[attachment.tid] = attached }
        let pointer = UInt(pthread_self())
        if let slot = attached.taskSlot, slot != pointer, taskWordOffset.load(ordering: .relaxed) == 0,
            UnsafeThreadDescriptor.learnOnCurrentThread()
        {
            taskWordOffset.store(slot &- pointer, ordering: .relaxed)
        }
    }

    /// Learns where the current-task word lies from the thread pointer on the calling thread, in
    /// a job of a task (the main actor's probe, `HangMonitor.startWatchingMainQueue`), where no
    /// pool thread taught it yet. Once.
    func learnTaskWordOffsetOnCurrentThread() {
        guard taskWordOffset.load(ordering: .relaxed) == 0, let slot = UnsafeCurrentTaskSlot.locateOnCurrentThread() else { return }
        let pointer = UInt(pthread_self())
        guard slot != pointer else { return }
        taskWordOffset.store(slot &- pointer, ordering: .relaxed)
    }

    /// Runs `learnTaskWordOffsetOnCurrentThread()` in one job on the main actor, unless the place
    /// is known already: for a watch of the main queue or the main run loop, whose hangs' reads
    /// need it where no pool thread taught it.
    func learnTaskWordOffsetOnTheMainActor() {
        guard !findsTaskSlots else { return }
        Task { @MainActor in self.learnTaskWordOffsetOnCurrentThread() }
    }

    /// Whether other threads' current-task words can be found (`taskSlot(threadPointer:)`).
    var findsTaskSlots: Bool { taskWordOffset.load(ordering: .relaxed) != 0 }

    /// The current-task word of the thread whose thread pointer is `pointer` (nil before a thread
    /// attached with its word taught where it lies).
    func taskSlot(threadPointer pointer: UInt) -> UInt? {
        let offset = taskWordOffset.load(ordering: .relaxed)
        return offset == 0 ? nil : pointer &+ offset
    }

    /// The key's destructor, on the exiting thread.
    private static func threadExiting(_ value: UnsafeMutableRawPointer?) {
        let tid = UnsafeCaptureBridge.currentThreadID()
        _ = shared.threads.withLock { $0.removeValue(forKey: tid) }
        guard let value, UInt(bitPattern: value) != 1 else { return }
        var current = stack_t()
        guard sigaltstack(nil, &current) == 0, current.ss_sp == value, current.ss_flags & Int32(SS_ONSTACK) == 0 else { return }
        var disable = stack_t()
        disable.ss_flags = Int32(SS_DISABLE)
        guard sigaltstack(&disable, nil) == 0 else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        munmap(value - page, current.ss_size + page)
    }
}
