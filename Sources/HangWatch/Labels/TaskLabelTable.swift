import Synchronization

/// The label sets each Swift task put in effect with `await HangMonitor.withLabels`, by task id
/// (the runtime's 64-bit id, never reused): a task runs on one thread after another, so its labels
/// cannot live in a thread's slot. The watchdog learns which task a hung thread runs (its
/// current-task word, or the pool watch's look) and reads that task's sets here.
///
/// Sixteen shards, each a lock around a dictionary and a few spare stacks: a task takes a lock at
/// its outermost entry and exit (a lookup at a nested entry), never while its labels are in effect.
/// A reader copies a task's sets under its shard's lock, so the stack it copies cannot meanwhile go
/// back to the spares and on to another task.
final class TaskLabelTable: Sendable {
    static let shared = TaskLabelTable()

    private final class Shard: Sendable {
        struct State {
            var stacks: [UInt64: UnsafeLabelStack] = [:]
            var spare: [UnsafeLabelStack] = []
        }
        let state = Mutex(State())
    }

    private static let shardCount = 16
    /// Spare stacks kept per shard (each about 200 bytes).
    private static let spareLimit = 32
    private let shards = (0..<TaskLabelTable.shardCount).map { _ in Shard() }

    private func shard(_ task: UInt64) -> Shard {
        // Ids are sequential: mix them so neighbours spread.
        shards[Int(truncatingIfNeeded: (task &* 0x9E37_79B9_7F4A_7C15) >> 60) & (Self.shardCount - 1)]
    }

    /// Task `task` puts `labels` in effect; returns its stack, for `leave`.
    func enter(_ task: UInt64, _ labels: [String: String]) -> UnsafeLabelStack {
        let stack = shard(task).state.withLock { state -> UnsafeLabelStack in
            if let known = state.stacks[task] { return known }
            let stack = state.spare.popLast() ?? UnsafeLabelStack()
            state.stacks[task] = stack
            return stack
        }
        stack.push(labels)
        return stack
    }

    /// Task `task`'s innermost set is no longer in effect; its entry goes with its last set.
    func leave(_ task: UInt64, _ stack: UnsafeLabelStack) {
        stack.pop()
        guard stack.isEmpty else { return }
        shard(task).state.withLock { state in
            guard state.stacks[task] === stack else { return }
            state.stacks[task] = nil
            if state.spare.count < Self.spareLimit { state.spare.append(stack) }
        }
    }

    /// The sets task `task` has in effect now, outermost first.
    func snapshot(_ task: UInt64) -> [[String: String]] {
        shard(task).state.withLock { $0.stacks[task]?.snapshot() ?? [] }
    }

    /// Tasks with labels in effect now (for tests).
    var taskCount: Int { shards.reduce(0) { count, shard in count + shard.state.withLock { $0.stacks.count } } }
}
