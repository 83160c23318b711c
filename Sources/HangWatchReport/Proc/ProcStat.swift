/// A process's or a thread's `stat` file (`/proc/<pid>/stat`, `/proc/<pid>/task/<tid>/stat`): its
/// scheduler state, CPU ticks and start time. The one parser of it, for the monitor (its threads,
/// read on the watchdog without building strings), the agent (is a monitored process alive, and
/// still the one that wrote) and the CLI (is a heartbeat's process the one it names).
@_spi(Internal) public struct ProcStat: Sendable, Equatable {
    /// Scheduler state letter: `R`, `S`, `D`, `T` (stopped), `t` (traced), `Z` (zombie), ...
    public var state: Character
    /// Field 14 and 15: CPU time in user and kernel mode, clock ticks.
    public var userTicks: UInt64
    public var systemTicks: UInt64
    /// Field 22: when it started, clock ticks after boot. A pid and its start time identify a
    /// process; a pid alone may have been reused.
    public var startTimeTicks: UInt64
    /// Field 10 and 12: page faults served without and with a read from disk (a thread's own, in
    /// its `task/<tid>/stat`). A major fault is the thread waiting for a page to be read in.
    public var minorFaults: UInt64
    public var majorFaults: UInt64

    public init(
        state: Character, userTicks: UInt64 = 0, systemTicks: UInt64 = 0, startTimeTicks: UInt64, minorFaults: UInt64 = 0,
        majorFaults: UInt64 = 0
    ) {
        self.minorFaults = minorFaults
        self.majorFaults = majorFaults
        self.state = state
        self.userTicks = userTicks
        self.systemTicks = systemTicks
        self.startTimeTicks = startTimeTicks
    }

    /// Stopped by a signal or a tracer.
    public var isStopped: Bool { state == "T" || state == "t" }
    /// Exited, waiting to be reaped: as good as gone.
    public var isZombie: Bool { state == "Z" || state == "X" }

    /// Parses the text of a `stat` file: `pid (comm) state ppid ...`. The name may hold spaces and
    /// parentheses, so the fields resume after the last `)`; nil when the text is not such a line.
    public static func parse(_ text: some StringProtocol) -> ProcStat? {
        parse(bytes: Array(text.utf8)[...])
    }

    package static func parse(bytes: ArraySlice<UInt8>) -> ProcStat? {
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        var fields = ByteFields(bytes[(close + 1)...])
        // The first field after ")" is field 3 (the state, one letter); field n the (n - 2)th.
        guard let state = fields.next(), state.count == 1, let letter = state.first,
            (0x41...0x5a).contains(letter) || (0x61...0x7a).contains(letter)
        else { return nil }
        var user: UInt64?, system: UInt64?, start: UInt64?, minor: UInt64?, major: UInt64?
        var number = 3
        while let field = fields.next() {
            number += 1
            switch number {
            case 10: minor = ByteFields.decimal(field)
            case 12: major = ByteFields.decimal(field)
            case 14: user = ByteFields.decimal(field)
            case 15: system = ByteFields.decimal(field)
            case 22: start = ByteFields.decimal(field)
            default: break
            }
            if number >= 22 { break }
        }
        guard let user, let system, let start else { return nil }
        return ProcStat(
            state: Character(Unicode.Scalar(letter)), userTicks: user, systemTicks: system, startTimeTicks: start,
            minorFaults: minor ?? 0, majorFaults: major ?? 0)
    }

    /// Process `pid`'s, or nil when there is none (or it cannot be read).
    public static func read(pid: Int32) -> ProcStat? {
        guard pid > 0 else { return nil }
        return read(path: "/proc/\(pid)/stat")
    }

    /// The `stat` file at `path` (`/proc/self/stat`, a thread's), nil when it cannot be read.
    public static func read(path: String) -> ProcStat? {
        SmallFile.text(path, limit: 4096).flatMap { parse($0) }
    }
}
