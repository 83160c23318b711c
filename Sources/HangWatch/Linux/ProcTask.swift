/// What /proc says about one thread of this process (`/proc/self/task/<tid>/...`).
/// Parsing is separate from reading so it can be tested with fixed text.
struct ProcTask: Sendable {
    let tid: Int32

    private var directory: String { "/proc/self/task/\(tid)" }

    /// `stat`: scheduler state, CPU ticks, start time.
    struct Stat: Equatable, Sendable {
        var state: Character
        var userTicks: UInt64
        var systemTicks: UInt64
        var startTimeTicks: UInt64
    }

    /// `schedstat`: nanoseconds on a CPU and waiting on a run queue.
    struct SchedStat: Equatable, Sendable {
        var onCPUNanoseconds: UInt64
        var runQueueNanoseconds: UInt64
    }

    /// `syscall`: what the thread is doing in the kernel.
    enum SyscallState: Equatable, Sendable {
        /// On a CPU right now.
        case running
        /// Blocked, but not in a system call (e.g. a page fault).
        case blockedOutsideSyscall(stackPointer: UInt, programCounter: UInt)
        /// Blocked in system call `number`.
        case inSyscall(number: Int, arguments: [UInt], stackPointer: UInt, programCounter: UInt)
    }

    func stat() -> Stat? {
        SmallFile.text(directory + "/stat").flatMap(Self.parseStat)
    }

    func schedStat() -> SchedStat? {
        SmallFile.text(directory + "/schedstat").flatMap(Self.parseSchedStat)
    }

    func syscall() -> SyscallState? {
        SmallFile.text(directory + "/syscall").flatMap(Self.parseSyscall)
    }

    /// Signals blocked by the thread (`SigBlk` in `status`), bit n-1 for signal n.
    func blockedSignals() -> UInt64? {
        guard let status = SmallFile.text(directory + "/status") else { return nil }
        return Self.statusField("SigBlk", in: status).flatMap { UInt64($0, radix: 16) }
    }

    func name() -> String? {
        SmallFile.text(directory + "/comm").map { $0.trimmingCharacters(in: .newlines) }
    }

    static func parseStat(_ text: String) -> Stat? {
        // "tid (comm) S ppid ...": comm may contain spaces and parentheses; fields resume after the last ')'.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        // fields[0] is field 3 (state); field n is fields[n - 3].
        guard fields.count >= 20, let state = fields[0].first,
            let user = UInt64(fields[14 - 3]), let system = UInt64(fields[15 - 3]),
            let start = UInt64(fields[22 - 3])
        else { return nil }
        return Stat(state: state, userTicks: user, systemTicks: system, startTimeTicks: start)
    }

    static func parseSchedStat(_ text: String) -> SchedStat? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count >= 2, let onCPU = UInt64(fields[0]), let queue = UInt64(fields[1]) else { return nil }
        return SchedStat(onCPUNanoseconds: onCPU, runQueueNanoseconds: queue)
    }

    static func parseSyscall(_ text: String) -> SyscallState? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard let first = fields.first else { return nil }
        if first == "running" { return .running }
        func hex(_ field: String) -> UInt? {
            UInt(field.hasPrefix("0x") ? String(field.dropFirst(2)) : field, radix: 16)
        }
        guard let number = Int(first) else { return nil }
        if number < 0 {
            guard fields.count >= 3, let sp = hex(fields[1]), let pc = hex(fields[2]) else { return nil }
            return .blockedOutsideSyscall(stackPointer: sp, programCounter: pc)
        }
        guard fields.count >= 9 else { return nil }
        let arguments = fields[1...6].compactMap(hex)
        guard arguments.count == 6, let sp = hex(fields[7]), let pc = hex(fields[8]) else { return nil }
        return .inSyscall(number: number, arguments: arguments, stackPointer: sp, programCounter: pc)
    }

    static func statusField(_ name: String, in status: String) -> String? {
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }
}

import Foundation
