/// What /proc says about a whole process, for HangWatch's own tools (the host agent checks that
/// the process behind a report or a heartbeat is still the same one). Not part of the public API.
@_spi(HangWatchTools)
public struct ProcessStatus: Sendable, Equatable {
    /// Scheduler state letter: `R`, `S`, `D`, `T` (stopped), `t` (traced), `Z` (zombie), ...
    public var state: Character
    /// Clock ticks after boot at which the process started: with the pid, its identity.
    public var startTimeTicks: UInt64

    public init(state: Character, startTimeTicks: UInt64) {
        self.state = state
        self.startTimeTicks = startTimeTicks
    }

    /// The status of process `pid`, or nil when there is none (or it cannot be read).
    public static func read(pid: Int32) -> ProcessStatus? {
        guard pid > 0, let text = SmallFile.text("/proc/\(pid)/stat"), let stat = ProcTask.parseStat(text) else { return nil }
        return ProcessStatus(state: stat.state, startTimeTicks: stat.startTimeTicks)
    }

    /// Stopped by a signal or a tracer.
    public var isStopped: Bool { state == "T" || state == "t" }
    /// Exited, waiting to be reaped: as good as gone.
    public var isZombie: Bool { state == "Z" || state == "X" }
}
