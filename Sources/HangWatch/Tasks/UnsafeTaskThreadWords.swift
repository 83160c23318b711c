import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Which task each thread runs now, and on which executor (the actor it holds), read from outside
/// the threads: the Swift runtime keeps both in thread-local words (`swift_task_getCurrent`'s, and
/// the active executor's tracking record right after it on the verified layout). Where they lie
/// from a thread's pointer is learnt once in the process, inside HangWatch's probe actor
/// (`UnsafeTaskDumpProbe`), where the runtime's current task and the probe actor itself are known:
/// the current-task word must be found exactly once in the runtime's thread-local block, and the
/// executor word must point at a record whose first word is the probe actor. Every other thread is
/// then found by its thread descriptor (`UnsafeThreadDescriptor`, at its stack mapping's end) and
/// read through the kernel. Unsafe: raw thread-local memory; process-wide state, beside the
/// runtime state it mirrors.
enum UnsafeTaskThreadWords {
    /// The current-task word's distance from a thread's pointer (wrapping; 0: not learnt).
    private static let taskWordOffset = Atomic<UInt>(0)
    /// The executor word's distance from the current-task word (Int.min: not proven).
    private static let executorDelta = Atomic<Int>(Int.min)

    /// One thread's words now.
    struct Look: Sendable, Equatable {
        var tid: Int32
        /// The task it runs (0: none).
        var task: UInt
        /// The identity of the executor it runs on (an actor's address; 0: the global pool, or none).
        var executor: UInt
    }

    /// Whether the words were learnt (the probe ran), and how far apart they are.
    static var learnt: (taskWordOffset: UInt, executorDelta: Int)? {
        let offset = taskWordOffset.load(ordering: .acquiring)
        let delta = executorDelta.load(ordering: .acquiring)
        return offset == 0 || delta == Int.min ? nil : (offset, delta)
    }

    /// Learns the words on the calling thread, inside a job of `actor` (its address): true when
    /// both were found exactly once (the task word, then the executor word among the task word's
    /// neighbours, `expectedDelta` first).
    static func learnOnCurrentThread(actor: UInt, expectedDelta: Int) -> Bool {
        guard let word = UnsafeCurrentTaskSlot.locateOnCurrentThread(), UnsafeThreadDescriptor.learnOnCurrentThread() else { return false }
        let candidates = [expectedDelta] + stride(from: -32, through: 32, by: 8).filter { $0 != 0 && $0 != expectedDelta }
        let proven = candidates.filter { delta in
            guard let record = UnsafeProcessMemory.copy(UInt.self, at: UInt(bitPattern: Int(bitPattern: word) &+ delta)), record != 0,
                let identity = UnsafeProcessMemory.copy(UInt.self, at: record)
            else { return false }
            return identity == actor
        }
        guard proven.count == 1 else { return false }
        taskWordOffset.store(word &- UInt(pthread_self()), ordering: .releasing)
        executorDelta.store(proven[0], ordering: .releasing)
        return true
    }

    /// Every thread found by its descriptor at the end of a stack mapping, with its words; empty
    /// before the words are learnt. The main thread (whose stack is not such a mapping) is not
    /// among them.
    static func lookAll(stacks: [StackMapping]) -> [Look] {
        guard let (offset, delta) = learnt else { return [] }
        return stacks.compactMap { mapping -> Look? in
            guard let thread = UnsafeThreadDescriptor.thread(mappingEnd: mapping.end) else { return nil }
            let word = thread.pointer &+ offset
            let task = UnsafeProcessMemory.copy(UInt.self, at: word) ?? 0
            var executor: UInt = 0
            if task != 0, let record = UnsafeProcessMemory.copy(UInt.self, at: UInt(bitPattern: Int(bitPattern: word) &+ delta)), record != 0,
                mapping.contains(record)
            {
                executor = UnsafeProcessMemory.copy(UInt.self, at: record) ?? 0
            }
            return Look(tid: thread.tid, task: task, executor: executor)
        }
    }
}
