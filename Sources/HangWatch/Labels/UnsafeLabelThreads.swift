import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One thread's part in labels: the sets it put in effect synchronously, and where its current
/// Swift task is kept (`UnsafeCurrentTaskSlot`), once found, so a watchdog can tell which task it
/// runs (and so the labels of that task, `TaskLabelTable`).
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

    /// From inside a task: finds the calling thread's current-task word (once per thread), and,
    /// the first time in the process, asks a main-actor job to find its thread's: a task that
    /// entered labels elsewhere and hung on the main actor is then known there too.
    static func noteTaskThread() {
        current._withUnsafeGuaranteedRef { $0.locateTaskWordIfNeeded() }
        if !mainActorAsked.load(ordering: .relaxed), !mainActorAsked.exchange(true, ordering: .relaxed) {
            Task { @MainActor in UnsafeLabelThreads.current._withUnsafeGuaranteedRef { $0.locateTaskWordIfNeeded() } }
        }
    }
}
