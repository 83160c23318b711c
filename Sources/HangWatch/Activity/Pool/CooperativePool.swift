/// The pools Swift's global executor runs tasks on, one per priority. On Linux each is a
/// libdispatch root queue whose workers are named after the last 15 bytes of the queue's label
/// (`com.apple.root.default-qos` → `oot.default-qos`); a task of priority `.high` runs on the
/// user-initiated pool's workers, `.low` on the utility pool's, `.background` on its own, and
/// `.medium` (or none) on the default pool's (checked on Swift 6.3: `Task.detached(priority:)`).
///
/// The pool watch looks at the workers of every pool for one job holding a thread (`pool-job`);
/// only the default pool, where nearly every task of a server runs, is probed for starvation.
enum CooperativePool: String, CaseIterable, Sendable {
    case userInitiated = "r-initiated-qos"
    case `default` = "oot.default-qos"
    case utility = "oot.utility-qos"
    case background = ".background-qos"

    /// The pool whose workers carry `threadName` (nil: not a pool worker's name; overcommit
    /// workers, `-qos.overcommit`, serve the main queue and serial queues, not tasks).
    init?(threadName: String?) {
        guard let threadName, let pool = Self(rawValue: threadName) else { return nil }
        self = pool
    }

    /// The priority whose tasks run on this pool (an attach job for its workers is one of them).
    var priority: TaskPriority {
        switch self {
        case .userInitiated: return .high
        case .default: return .medium
        case .utility: return .low
        case .background: return .background
        }
    }

    /// Whether the pool watch's probe measures this pool (a starved pool gets one report holding
    /// every worker): the default pool only.
    var isProbed: Bool { self == .default }
}
