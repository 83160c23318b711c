/// What a `hangwatch dump` request asks for, told by its nonce (the 48 bits the signal's value
/// carries after the dump tag): with bit 47 set, every Swift task (`hangwatch dump --tasks`); with
/// bit 46 set, the current window of every flight recorder (`hangwatch dump --recent`); otherwise
/// every thread. A monitor that predates task dumps reads any nonce as a thread dump's, and one that
/// predates recent-window dumps reads bit 46 as part of a thread dump's nonce: each answers with a
/// thread dump (the CLI says so). A new tag would have reached such a monitor's previous signal
/// handler instead. Bit 47 wins over bit 46 (no request sets both). Pure.
enum DumpKind: Equatable, Sendable {
    case threads
    case tasks
    case recent

    static let tasksBit: UInt64 = 1 << 47
    static let recentBit: UInt64 = 1 << 46

    init(nonce: UInt64) {
        self = nonce & Self.tasksBit != 0 ? .tasks : nonce & Self.recentBit != 0 ? .recent : .threads
    }
}
