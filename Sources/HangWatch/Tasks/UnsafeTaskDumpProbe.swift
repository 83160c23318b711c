import Synchronization

/// HangWatch's own probe task, started at the first task dump of the process: it learns, inside an
/// actor of its own, where a thread keeps its current task and its active executor
/// (`UnsafeTaskThreadWords`), then parks on a continuation inside `parkForSelfTest` so the dump can
/// read it as it reads every task and check what it read against what the probe knows (its id,
/// from the runtime; that it waits on a continuation; a complete chain): the self-test of the
/// layout (`TaskDumpSelfTest`). The dump lists every task but this one, then lets it go. Unsafe:
/// it publishes raw task addresses, process-wide state beside the runtime's.
final class UnsafeTaskDumpProbe: Sendable {
    /// What the probe knows about itself, once parked.
    struct Parked: Sendable, Equatable {
        var task: UInt
        var id: UInt64
        /// It learnt the thread words.
        var learnt: Bool
    }

    private let state = Mutex<(parked: Parked?, continuation: CheckedContinuation<Void, Never>?, started: Bool, verdict: TaskDumpSelfTest?)>(
        (nil, nil, false, nil))

    /// The process's.
    static let shared = UnsafeTaskDumpProbe()

    /// Starts the probe once (later calls do nothing); `parked` is called when it has parked (or
    /// gave up), on a pool thread.
    func start(layout: TaskLayout, parked: @escaping @Sendable () -> Void) {
        let first = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        let delta = layout.executorWordAfterTaskWord
        Task.detached(priority: .medium) { [self] in
            let learnt = await ProbeActor().learn(expectedDelta: delta)
            guard let task = UnsafeTaskRuntime.currentTask() else {
                parked()
                return
            }
            await parkForSelfTest(Parked(task: task.address, id: task.id, learnt: learnt), then: parked)
        }
    }

    @inline(never)
    private func parkForSelfTest(_ me: Parked, then parked: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                state.parked = me
                state.continuation = continuation
            }
            parked()
        }
    }

    /// The probe while it is parked; nil before, and after `release`.
    var parked: Parked? { state.withLock { $0.parked } }

    /// Whether it was started (at most once a process).
    var started: Bool { state.withLock { $0.started } }

    /// What the check of the layout found on it, once judged (kept for the process's later dumps;
    /// a probe that had not parked is started again at the next dump).
    var verdict: TaskDumpSelfTest? {
        get { state.withLock { $0.verdict } }
        set {
            state.withLock { state in
                state.verdict = newValue
                if case .notRun = newValue { state.started = false }
            }
        }
    }

    /// Lets the parked probe end (after the dump read it).
    func release() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer {
                state.continuation = nil
                state.parked = nil
            }
            return state.continuation
        }
        continuation?.resume()
    }
}

/// The probe's actor: inside its job, the thread's active executor is this actor.
private actor ProbeActor {
    func learn(expectedDelta: Int) -> Bool {
        UnsafeTaskThreadWords.learnOnCurrentThread(actor: UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()), expectedDelta: expectedDelta)
    }
}
