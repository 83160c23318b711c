import Synchronization

/// The label sets each Swift task put in effect with `await HangMonitor.withLabels`, by task id
/// (the runtime's 64-bit id, never reused): a task runs on one thread after another, so its labels
/// cannot live in a thread's slot. The watchdog learns which task a hung thread runs (its
/// current-task word, or the pool watch's look) and reads that task's sets here.
///
/// Lock-free: `capacity` slots, each a task id (0: free) and a stack (made the first time the slot
/// is used, kept for the next task). A task's id hashes to a bucket of 8 slots (one cache line of
/// ids); a task looks for its own id there (a nested entry), else takes a free slot with a
/// compare-and-exchange, trying up to `probes` buckets; it frees the slot when its outermost set
/// goes. Each bucket counts the tasks that found it full and hold a slot further on (`spilled`),
/// so a search stops at the first bucket that spilled none: one cache line, nearly always. A reader finds the slot the same way, copies its stack (`UnsafeLabelStack`'s protocol),
/// and keeps the copy only if the slot still holds the task's id afterwards: a slot freed and taken
/// by another task meanwhile is never read as this one's. With every slot of its buckets taken (a
/// process with thousands of tasks inside labels at once, unlucky), a task's labels are not in
/// effect (`overflows` counts it). Unsafe: raw storage shared across threads, under that protocol.
final class UnsafeTaskLabelTable: @unchecked Sendable {
    static let shared = UnsafeTaskLabelTable()

    static let capacity = 8192
    static let bucket = 8
    static let probes = 8

    private let ids: UnsafeMutablePointer<Atomic<UInt64>>
    /// Per bucket: tasks holding a slot past it (they found it full).
    private let spilled: UnsafeMutablePointer<Atomic<Int>>
    /// Each slot's stack, unmanaged (made on the slot's first use, retained for good); 0: none yet.
    private let stacks: UnsafeMutablePointer<Atomic<UInt>>
    /// Entries that found no free slot (their labels were not in effect).
    let overflows = Atomic<Int>(0)

    private init() {
        // One bucket per cache line.
        let raw = UnsafeMutableRawPointer.allocate(byteCount: Self.capacity * MemoryLayout<Atomic<UInt64>>.stride, alignment: 64)
        ids = raw.bindMemory(to: Atomic<UInt64>.self, capacity: Self.capacity)
        stacks = .allocate(capacity: Self.capacity)
        spilled = .allocate(capacity: Self.capacity / Self.bucket)
        for index in 0..<(Self.capacity / Self.bucket) { (spilled + index).initialize(to: Atomic(0)) }
        for index in 0..<Self.capacity {
            (ids + index).initialize(to: Atomic(0))
            (stacks + index).initialize(to: Atomic(0))
        }
    }

    /// The first slot of the bucket task `task` hashes to.
    @inline(__always)
    static func home(_ task: UInt64) -> Int {
        // Ids are sequential: mix them so neighbours spread over the buckets.
        Int(truncatingIfNeeded: (task &* 0x9E37_79B9_7F4A_7C15) >> 40) & (capacity - 1) & ~(bucket - 1)
    }

    /// The first slot of the bucket `steps` buckets after `start`'s.
    @inline(__always)
    private static func bucket(_ start: Int, plus steps: Int) -> Int {
        (start + steps * bucket) & (capacity - 1)
    }

    /// The slot holding `task`, if any.
    @inline(__always)
    private func find(_ task: UInt64) -> Int? {
        let home = Self.home(task)
        for step in 0..<Self.probes {
            let start = Self.bucket(home, plus: step)
            for slot in start..<(start + Self.bucket) where ids[slot].load(ordering: .acquiring) == task { return slot }
            if spilled[start / Self.bucket].load(ordering: .acquiring) == 0 { return nil }
        }
        return nil
    }

    /// Task `task` puts `labels` in effect: the slot to hand to `leave`, or -1 when no slot was
    /// free (nothing to undo).
    func enter(_ task: UInt64, _ labels: [String: String]) -> Int {
        let slot: Int
        // The home bucket first, in one pass: the task's own slot (a nested entry), else a free one.
        let home = Self.home(task)
        var free = -1
        var own = -1
        for candidate in home..<(home + Self.bucket) {
            let id = ids[candidate].load(ordering: .acquiring)
            if id == task {
                own = candidate
                break
            }
            if id == 0 && free < 0 { free = candidate }
        }
        if own >= 0 {
            slot = own
        } else if free >= 0, spilled[home / Self.bucket].load(ordering: .acquiring) == 0,
            ids[free].compareExchange(expected: 0, desired: task, ordering: .acquiringAndReleasing).exchanged
        {
            slot = free
        } else if let found = find(task) ?? claim(task) {
            slot = found
        } else {
            overflows.add(1, ordering: .relaxed)
            return -1
        }
        stack(slot)._withUnsafeGuaranteedRef { $0.push(labels) }
        return slot
    }

    private func claim(_ task: UInt64) -> Int? {
        let home = Self.home(task)
        for step in 0..<Self.probes {
            let start = Self.bucket(home, plus: step)
            for slot in start..<(start + Self.bucket) where ids[slot].load(ordering: .relaxed) == 0 {
                guard ids[slot].compareExchange(expected: 0, desired: task, ordering: .acquiringAndReleasing).exchanged else { continue }
                for passed in 0..<step { spilled[Self.bucket(home, plus: passed) / Self.bucket].add(1, ordering: .releasing) }
                return slot
            }
        }
        return nil
    }

    /// Slot `slot`'s stack, made on first use (by the task that holds the slot).
    @inline(__always)
    private func stack(_ slot: Int) -> Unmanaged<UnsafeLabelStack> {
        let known = stacks[slot].load(ordering: .acquiring)
        if known != 0 { return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: known)!) }
        return makeStack(slot)
    }

    @inline(never)
    private func makeStack(_ slot: Int) -> Unmanaged<UnsafeLabelStack> {
        let made = Unmanaged.passRetained(UnsafeLabelStack())
        let bits = UInt(bitPattern: made.toOpaque())
        let (stored, existing) = stacks[slot].compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing)
        if stored { return made }
        made.release()
        return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: existing)!)
    }

    /// The task that entered `slot` leaves its innermost set; the slot is free again with its last.
    func leave(_ slot: Int) {
        guard slot >= 0 else { return }
        let empty = stack(slot)._withUnsafeGuaranteedRef { stack -> Bool in
            stack.pop()
            return stack.isEmpty
        }
        guard empty else { return }
        let home = Self.home(ids[slot].load(ordering: .relaxed))
        let steps = ((slot - home) & (Self.capacity - 1)) / Self.bucket
        for passed in 0..<steps { spilled[Self.bucket(home, plus: passed) / Self.bucket].subtract(1, ordering: .releasing) }
        ids[slot].store(0, ordering: .releasing)
    }

    /// The sets task `task` has in effect now, outermost first.
    func snapshot(_ task: UInt64) -> [[String: String]] {
        guard task != 0, let slot = find(task), stacks[slot].load(ordering: .acquiring) != 0 else { return [] }
        let sets = stack(slot)._withUnsafeGuaranteedRef { $0.snapshot() }
        // Freed and taken by another task while we copied: not this task's.
        return ids[slot].load(ordering: .sequentiallyConsistent) == task ? sets : []
    }

    /// Slots held now (for tests).
    var taskCount: Int { (0..<Self.capacity).filter { ids[$0].load(ordering: .relaxed) != 0 }.count }
}
