import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The label sets in effect for one thread or one task, innermost last: written by their owner
/// (the thread, or the task, which runs one part at a time), read by the watchdog from another
/// thread at any time.
///
/// The owner's cost is what `HangMonitor.withLabels` costs: `push` stores the caller's dictionary
/// unretained (its bits: the caller keeps it alive until after the matching `pop`) and publishes
/// the new depth; `pop` publishes the old depth, then checks that no reader is copying the set it
/// is about to let go of (one atomic exchange and a load: no lock, no allocation, no reference
/// counting). A reader announces itself before it reads the depth (`readers`), so either it sees
/// the depth already lowered and never touches the set, or the owner sees it and waits (spinning,
/// then yielding) the few hundred nanoseconds its copy takes. Sequentially consistent: the
/// owner's depth store and the reader's announcement must not pass each other's later load.
///
/// At most `capacity` sets are kept; deeper nesting is counted (so `pop` stays balanced) but its
/// labels are not in effect. Unsafe: raw storage shared across threads, correct only under this
/// protocol (one owner at a time).
final class UnsafeLabelStack: @unchecked Sendable {
    static let capacity = 16

    /// The sets' bits (a `[String: String]` is one reference), unretained.
    private let entries: UnsafeMutablePointer<UInt>
    /// Sets pushed and not popped, those past `capacity` included.
    private let depth = Atomic<Int>(0)
    /// Readers copying sets now.
    private let readers = Atomic<Int>(0)

    init() {
        precondition(MemoryLayout<[String: String]>.size == MemoryLayout<UInt>.size)
        entries = .allocate(capacity: Self.capacity)
        entries.initialize(repeating: 0, count: Self.capacity)
    }

    deinit {
        entries.deinitialize(count: Self.capacity)
        entries.deallocate()
    }

    /// Owner only: `labels` are in effect until the matching `pop`, and must stay alive until it
    /// returned (`withLabels` holds them: `_fixLifetime` after the pop).
    @inline(__always)
    func push(_ labels: [String: String]) {
        let current = depth.load(ordering: .relaxed)
        if current < Self.capacity { entries[current] = unsafeBitCast(labels, to: UInt.self) }
        depth.store(current + 1, ordering: .releasing)
    }

    /// Owner only: the innermost set is no longer in effect.
    @inline(__always)
    func pop() {
        let current = depth.load(ordering: .relaxed) - 1
        depth.store(current, ordering: .sequentiallyConsistent)
        guard current < Self.capacity else { return }
        if readers.load(ordering: .sequentiallyConsistent) != 0 { waitForReaders() }
    }

    /// Owner only: no set is in effect.
    var isEmpty: Bool { depth.load(ordering: .relaxed) == 0 }

    /// Any thread: the sets in effect now, outermost first.
    func snapshot() -> [[String: String]] {
        readers.add(1, ordering: .sequentiallyConsistent)
        defer { readers.subtract(1, ordering: .releasing) }
        let count = min(depth.load(ordering: .sequentiallyConsistent), Self.capacity)
        guard count > 0 else { return [] }
        // A copy of each (retained: `load` copies), while the owner keeps them alive.
        return (0..<count).map { UnsafeRawPointer(entries + $0).load(as: [String: String].self) }
    }

    private func waitForReaders() {
        var spins = 0
        while readers.load(ordering: .sequentiallyConsistent) != 0 {
            spins += 1
            // The reader may have lost its CPU mid-copy: let it run.
            if spins > 64 { sched_yield() }
        }
    }
}
