import Foundation
@_spi(Internal) import HangWatchReport

/// The agent's outside view of one embedded monitor, from its heartbeat file and /proc.
///
/// What it can tell: the process is gone (the file is stale), the process is stopped by a signal
/// or a tracer, the watchdog thread stopped ticking while the process lives (the watchdog itself is
/// stuck or dead). What it cannot: whether the loop is hung (that is the watchdog's job and its
/// reports'), whether a live watchdog is making correct decisions, or anything about a monitor
/// started with `heartbeatInterval` 0. A watchdog is only known to be silent after twice its
/// interval plus the grace period.
enum MonitorHealth: Sendable, Equatable {
    case healthy
    /// The monitor stopped (it says so in the page).
    case stopped
    /// No such process any more (or the pid belongs to another process): the file is left over.
    case stale(reason: String)
    /// The process is stopped (SIGSTOP, job control, a debugger, a cgroup freezer): nothing in it runs.
    case processStopped
    /// The watchdog has not ticked for this long while the process runs.
    case watchdogSilent(seconds: Double)

    /// Assesses `heartbeat` given the process's status and the time (`CLOCK_MONOTONIC`, ns).
    /// `frozen` is asked only of a watchdog that looks silent: a process whose cgroup is frozen
    /// (`docker pause`) runs nothing, its watchdog included, and is stopped, not a silent watchdog
    /// (a v1 frozen task is `D`, a v2 one `S`: its state letter does not say so).
    static func assess(
        _ heartbeat: MonitorHeartbeat, status: ProcStat?, nowMonotonicNanoseconds: UInt64, grace: Duration,
        frozen: () -> Bool = { false }
    ) -> MonitorHealth {
        if let reason = HangFinisher.exitReason(pid: heartbeat.pid, startTimeTicks: heartbeat.startTimeTicks, status: status) {
            return .stale(reason: reason)
        }
        if status?.isStopped == true { return .processStopped }
        if heartbeat.state == .stopped { return .stopped }
        let allowed = 2 * heartbeat.intervalMilliseconds * 1_000_000 + UInt64(DurationText.nanoseconds(grace))
        let silent = nowMonotonicNanoseconds > heartbeat.tickMonotonicNanoseconds ? nowMonotonicNanoseconds - heartbeat.tickMonotonicNanoseconds : 0
        if silent > allowed { return frozen() ? .processStopped : .watchdogSilent(seconds: Double(silent) / 1e9) }
        return .healthy
    }

    /// Worth a warning (and a flag in the status line).
    var isProblem: Bool {
        switch self {
        case .processStopped, .watchdogSilent: return true
        case .healthy, .stopped, .stale: return false
        }
    }

    var summary: String {
        switch self {
        case .healthy: return "healthy"
        case .stopped: return "monitor stopped"
        case .stale(let reason): return "process \(reason)"
        case .processStopped: return "process stopped"
        case .watchdogSilent(let seconds): return "watchdog silent for \(Int(seconds)) s"
        }
    }
}
