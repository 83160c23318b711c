import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the agent talks to besides the spool and its exporters: its clock, the processes it
/// checks, systemd, its environment, and where it keeps time. `system` is the host's; a test
/// scripts its own (a clock it moves by hand, a table of processes, a notifier that records).
struct AgentContext: Sendable {
    /// Time, and the timers of the time keeper.
    var clock: any AgentClock
    var processes: any ProcessTable
    var notifier: any SystemdNotifying
    /// The agent's environment (`WATCHDOG_USEC`, `WATCHDOG_PID`).
    var environment: [String: String]
    /// The agent's own pid (`WATCHDOG_PID` must name it).
    var pid: Int32
    /// Where timers fire and inotify is read: the main queue, whose run loop the agent watches.
    var timeKeeper: DispatchQueue
    /// Follow the spool with inotify (otherwise changes are seen at the next full scan).
    var watchesChanges: Bool
    /// Watch the time keeper's loop with a `HangMonitor` (when `HANGWATCHD_SELF_THRESHOLD` is not 0).
    var watchesItself: Bool

    /// The host: the main run loop, `/proc`, `$NOTIFY_SOCKET`.
    static var system: AgentContext {
        AgentContext(
            clock: SystemClock(.mainRunLoop), processes: ProcFileSystem(), notifier: SystemdNotifier(),
            environment: ProcessInfo.processInfo.environment, pid: getpid(), timeKeeper: .main, watchesChanges: true,
            watchesItself: true)
    }
}
