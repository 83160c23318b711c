/// The thread whose loop is watched: who it is, and the bounds the unwinder may read.
package struct MonitoredThread: Sendable, Equatable {
    /// Kernel thread id.
    package var tid: Int32
    /// Start time in clock ticks since boot; with `tid`, tells this thread from a later one that
    /// reuses its id.
    package var startTimeTicks: UInt64
    package var stackLow: UInt
    package var stackHigh: UInt
    package var name: String?
    package var isMain: Bool
    /// It lets the capture signal through and has an alternate stack: it ran the attach step, or
    /// was prepared (`ThreadPreparer`). Stack bounds alone (a blocked thread's, from the mapping
    /// that holds its stack pointer) are not that.
    package var preparedForSignals: Bool

    /// `preparedForSignals` nil: prepared when its stack bounds are given (the attach step's).
    package init(
        tid: Int32, startTimeTicks: UInt64, stackLow: UInt, stackHigh: UInt, name: String?, isMain: Bool,
        preparedForSignals: Bool? = nil
    ) {
        self.tid = tid
        self.startTimeTicks = startTimeTicks
        self.stackLow = stackLow
        self.stackHigh = stackHigh
        self.name = name
        self.isMain = isMain
        self.preparedForSignals = preparedForSignals ?? (stackHigh != 0)
    }
}
