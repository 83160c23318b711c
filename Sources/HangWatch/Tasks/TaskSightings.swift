/// How long each task has been seen waiting the same way by this monitor's task dumps: the runtime
/// keeps no time of a suspension, so the dump remembers, from one dump to the next, each task's
/// id with what it waits on (its resume context and dependency record) and when it was first seen
/// so. A task seen the same at a later dump has waited at least since then (it may have run in
/// between and come back to the very same wait: that is not seen). Pure; one per process, kept by
/// the dump service between dumps; bounded (`capacity` tasks: past it the newest are not kept).
struct TaskSightings: Sendable, Equatable {
    /// What must stay the same for a task to count as unchanged.
    struct Wait: Sendable, Equatable, Hashable {
        var context: UInt
        var record: UInt
        var state: String
    }

    var capacity: Int
    private var seen: [UInt64: (wait: Wait, since: UInt64)] = [:]
    /// When the earliest sighting still kept was made (µs), nil before any dump.
    private(set) var earliest: UInt64?

    init(capacity: Int = 1_000_000) {
        self.capacity = capacity
    }

    static func == (a: TaskSightings, b: TaskSightings) -> Bool {
        a.capacity == b.capacity && a.earliest == b.earliest && a.seen.count == b.seen.count
            && a.seen.allSatisfy { b.seen[$0.key]?.wait == $0.value.wait && b.seen[$0.key]?.since == $0.value.since }
    }

    /// The tasks of a dump at `now` (µs): how long each was seen unchanged (µs; absent when first
    /// seen now, or changed since), and the sightings replaced by these (tasks gone are forgotten).
    mutating func observe(_ tasks: [(id: UInt64, wait: Wait)], at now: UInt64) -> [UInt64: UInt64] {
        var next: [UInt64: (wait: Wait, since: UInt64)] = [:]
        next.reserveCapacity(min(tasks.count, capacity))
        var unchanged: [UInt64: UInt64] = [:]
        for task in tasks {
            if let before = seen[task.id], before.wait == task.wait, before.since <= now {
                next[task.id] = before
                unchanged[task.id] = now - before.since
            } else if next.count < capacity {
                next[task.id] = (task.wait, now)
            }
        }
        seen = next
        earliest = next.values.map(\.since).min() ?? now
        return unchanged
    }
}
