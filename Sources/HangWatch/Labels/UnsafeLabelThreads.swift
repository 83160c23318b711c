import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One thread's part in labels: the sets it put in effect synchronously, and where its current
/// Swift task is kept (`UnsafeCurrentTaskSlot`), once found, so a watchdog can tell which task it
/// runs (and so the labels of that task, `UnsafeTaskLabelTable`).
final class LabelThread: Sendable {
    let tid: Int32
    let stack = UnsafeLabelStack()
    /// The address of the thread's current-task word; 0 until found.
    let taskWord = Atomic<UInt>(0)

    init(tid: Int32) {
        self.tid = tid
    }

    /// Finds the thread's current-task word, once, from inside a task (a no-op after).
    func locateTaskWordIfNeeded() {
        guard taskWord.load(ordering: .relaxed) == 0, let word = UnsafeCurrentTaskSlot.locateOnCurrentThread() else { return }
        taskWord.store(word, ordering: .relaxed)
    }
}

/// The `LabelThread` of each thread that used labels: the calling thread's through a
/// thread-specific key (a load, no lock), any thread's by id for the watchdog. A thread's entry
/// goes when it exits (the key's destructor). Unsafe: the key holds an unmanaged reference.
enum UnsafeLabelThreads {
    private static let threads = Mutex<[Int32: LabelThread]>([:])

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { value in
            guard let value else { return }
            let thread = Unmanaged<LabelThread>.fromOpaque(value).takeRetainedValue()
            UnsafeLabelThreads.threads.withLock { threads in
                if threads[thread.tid] === thread { threads[thread.tid] = nil }
            }
        }
        return key
    }()

    /// The calling thread's `LabelThread` (made on its first use), unretained: the key keeps it
    /// while the thread lives. Use it with `_withUnsafeGuaranteedRef` (no retain, no release).
    @inline(__always)
    static var current: Unmanaged<LabelThread> {
        if let value = pthread_getspecific(key) { return Unmanaged.fromOpaque(value) }
        return makeCurrent()
    }

    @inline(never)
    private static func makeCurrent() -> Unmanaged<LabelThread> {
        let thread = LabelThread(tid: UnsafeCaptureBridge.currentThreadID())
        let unmanaged = Unmanaged.passRetained(thread)
        pthread_setspecific(key, unmanaged.toOpaque())
        threads.withLock { $0[thread.tid] = thread }
        return unmanaged
    }

    /// Thread `tid`'s entry, if it used labels.
    static func thread(tid: Int32) -> LabelThread? {
        threads.withLock { $0[tid] }
    }

    /// Whether a job on the main actor looked for its thread's current-task word already.
    private static let mainActorAsked = Atomic<Bool>(false)

    /// From inside a task: the id of the task the calling thread runs (from the thread's own
    /// current-task word: two loads), finding that word first if this thread's is not known yet
    /// (once per thread; the first time in the process, a main-actor job is also asked to find its
    /// thread's: a task that entered labels elsewhere and hung on the main actor is then known
    /// there too). Nil outside a task, or on a runtime whose word cannot be found.
    @inline(__always)
    static func currentTaskID() -> UInt64? {
        let word = current._withUnsafeGuaranteedRef { $0.taskWord.load(ordering: .relaxed) }
        if word != 0 { return UnsafeCurrentTaskSlot.ownTaskID(word: word) }
        return firstTaskID()
    }

    @inline(never)
    private static func firstTaskID() -> UInt64? {
        current._withUnsafeGuaranteedRef { $0.locateTaskWordIfNeeded() }
        if !mainActorAsked.load(ordering: .relaxed), !mainActorAsked.exchange(true, ordering: .relaxed) {
            Task { @MainActor in UnsafeLabelThreads.current._withUnsafeGuaranteedRef { $0.locateTaskWordIfNeeded() } }
        }
        return UnsafeCurrentTaskSlot.currentTaskID()
    }

    /// After a task's labels were left (it may run on another thread than where it entered them):
    /// finds this thread's current-task word if not known yet.
    @inline(__always)
    static func noteTaskThread() {
        current._withUnsafeGuaranteedRef { thread in
            if thread.taskWord.load(ordering: .relaxed) == 0 { thread.locateTaskWordIfNeeded() }
        }
    }
}
