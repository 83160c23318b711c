import Synchronization

/// Who answers `hangwatch dump PID` in a process: one running monitor at a time, the latest to
/// start (when it stops, the one before it). A request arrives as the capture signal, whose
/// handler posts the one wake registered with it: the answering monitor's watchdog wake. Only that
/// monitor's dump lane (`DumpLane`) takes the requests, and this decides which it serves
/// (`DumpAdmission`: one at a time, a few a minute: the process's bound, whichever monitor
/// answers).
///
/// One per process (`ProcessRuntime.dumps`): the process's registers the wake the signal handler
/// posts; a scripted world's runtime makes its own, whose registration goes nowhere.
final class DumpRegistry: Sendable {
    private struct State {
        /// Monitors that answer dumps, in the order they started: the last answers.
        var monitors: [(owner: ObjectIdentifier, wake: WatchdogWake)] = []
        var admission = DumpAdmission()
    }

    private let state = Mutex(State())
    /// Makes `wake` the one a request posts; nil: none (the last monitor stopped, `leaving`'s).
    private let register: @Sendable (_ wake: WatchdogWake?, _ leaving: WatchdogWake?) -> Void

    init(register: @escaping @Sendable (_ wake: WatchdogWake?, _ leaving: WatchdogWake?) -> Void = { _, _ in }) {
        self.register = register
    }

    /// `owner` started: it answers from now on.
    func enroll(_ owner: ObjectIdentifier, wake: WatchdogWake) {
        state.withLock { state in
            state.monitors.removeAll { $0.owner == owner }
            state.monitors.append((owner, wake))
            register(wake, nil)
        }
    }

    /// `owner` stopped: the monitor that started before it answers again (none: requests wake no one).
    func withdraw(_ owner: ObjectIdentifier) {
        state.withLock { state in
            guard let index = state.monitors.firstIndex(where: { $0.owner == owner }) else { return }
            let leaving = state.monitors.remove(at: index)
            register(state.monitors.last?.wake, leaving.wake)
        }
    }

    /// Whether `owner` is the monitor that answers.
    func answers(_ owner: ObjectIdentifier) -> Bool {
        state.withLock { $0.monitors.last?.owner == owner }
    }

    /// The decisions for `count` requests pending at `now`, in their order (the process's bound).
    func admit(_ count: Int, at now: UInt64) -> [DumpAdmission.Decision] {
        state.withLock { $0.admission.admit(count, at: now) }
    }
}
