/// The thread whose loop is watched: who it is, and the bounds the unwinder may read.
struct MonitoredThread: Sendable, Equatable {
    /// Kernel thread id.
    var tid: Int32
    /// Start time in clock ticks since boot; with `tid`, tells this thread from a later one that
    /// reuses its id.
    var startTimeTicks: UInt64
    var stackLow: UInt
    var stackHigh: UInt
    var name: String?
    var isMain: Bool
}
