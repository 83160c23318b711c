/// What a `hangwatch dump` request asks for, told by its nonce (the 48 bits the signal's value
/// carries after the dump tag): with bit 47 set, every Swift task (`hangwatch dump --tasks`);
/// otherwise every thread. A monitor that predates task dumps reads any nonce as a thread dump's,
/// and answers with one (the CLI says so): a new tag would have reached such a monitor's previous
/// signal handler instead. Pure.
enum DumpKind: Equatable, Sendable {
    case threads
    case tasks

    static let tasksBit: UInt64 = 1 << 47

    init(nonce: UInt64) {
        self = nonce & Self.tasksBit != 0 ? .tasks : .threads
    }
}
