import Synchronization

/// A named thread that runs while it has members (the watchdog's lanes, the event-loop watcher's
/// loops): `add` starts it when none runs, and the thread, at each turn, takes its members and
/// exits when none is left. Both happen under one lock, so a member added while the thread exits
/// either reaches it or starts another, never neither.
final class OnDemandThread<Member: Sendable>: Sendable {
    private struct State {
        var members: [Member] = []
        var runs = false
    }
    private let state: Mutex<State>
    private let name: String
    private let stackSize: Int

    /// `members`: there from the start, for a `body` the caller runs on its own thread (tests).
    init(name: String, stackSize: Int, members: [Member] = []) {
        self.name = name
        self.stackSize = stackSize
        state = Mutex(State(members: members))
    }

    /// Adds `member`, and starts the thread running `body` if none runs. False when one runs
    /// already: wake it to see the member.
    func add(_ member: Member, body: @escaping @Sendable () -> Void) -> Bool {
        let start = state.withLock { state -> Bool in
            state.members.append(member)
            defer { state.runs = true }
            return !state.runs
        }
        if start { NamedThread.start(name, stackSize: stackSize, body) }
        return start
    }

    /// Adds `member` for a thread the caller runs itself (`body` on its own thread, tests on
    /// scripted time): starts none.
    func enlist(_ member: Member) {
        state.withLock { $0.members.append(member) }
    }

    /// Whether any member is one `matches` picks.
    func contains(where matches: (Member) -> Bool) -> Bool {
        state.withLock { $0.members.contains(where: matches) }
    }

    /// The thread's turn: drops the members `leaving` picks (asked once each) and returns them
    /// with the rest. None left (`current` empty), the thread must return now: it counts as
    /// stopped from here.
    func turn(dropping leaving: (Member) -> Bool) -> (current: [Member], dropped: [Member]) {
        state.withLock { state in
            // The common turn drops no one: the members as they are, no copy made.
            guard let first = state.members.firstIndex(where: leaving) else { return (state.members, []) }
            var current = Array(state.members[..<first])
            var dropped = [state.members[first]]
            for member in state.members[(first + 1)...] {
                if leaving(member) { dropped.append(member) } else { current.append(member) }
            }
            state.members = current
            if current.isEmpty { state.runs = false }
            return (current, dropped)
        }
    }
}
