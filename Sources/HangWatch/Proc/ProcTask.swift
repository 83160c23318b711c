/// What /proc says about one thread of this process (`/proc/self/task/<tid>/...`).
/// Parsing is separate from reading so it can be tested with fixed text.
package struct ProcTask: Sendable {
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
    package struct SchedStat: Equatable, Sendable {
        package var onCPUNanoseconds: UInt64
        package var runQueueNanoseconds: UInt64
        /// How many times the thread was put on a CPU (0 where the kernel keeps no count). Unlike
        /// the CPU time, which is brought up to date only now and then while a thread runs, it
        /// moves the moment a sleeping thread is woken and runs.
        package var timeslices: UInt64
        /// CPU and run-queue time together: how long the thread was runnable (a thread not put on
        /// a CPU again since a reading ran on that long before it blocked).
        package var runnableNanoseconds: UInt64 { onCPUNanoseconds &+ runQueueNanoseconds }
        package init(onCPUNanoseconds: UInt64, runQueueNanoseconds: UInt64, timeslices: UInt64 = 0) {
            self.onCPUNanoseconds = onCPUNanoseconds
            self.runQueueNanoseconds = runQueueNanoseconds
            self.timeslices = timeslices
        }
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

    /// Renames the thread (`comm`, 15 bytes at most). Only a thread of this process may be named.
    func setName(_ name: String) {
        let fd = open(directory + "/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    func name() -> String? {
        SmallFile.text(directory + "/comm").map { $0.trimmingCharacters(in: .newlines) }
    }

    static func parseStat(_ text: String) -> Stat? { parseStat(bytes: Array(text.utf8)[...]) }
    static func parseSchedStat(_ text: String) -> SchedStat? { parseSchedStat(bytes: Array(text.utf8)[...]) }
    static func parseSyscall(_ text: String) -> SyscallState? { parseSyscall(bytes: Array(text.utf8)[...]) }

    static func parseStat(bytes: ArraySlice<UInt8>) -> Stat? {
        // "tid (comm) S ppid ...": comm may contain spaces and parentheses; fields resume after the last ')'.
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        var fields = ByteFields(bytes[(close + 1)...])
        // The next field is field 3 (state); field n is the (n - 2)th from here.
        guard let state = fields.next(), let letter = state.first else { return nil }
        var user: UInt64?, system: UInt64?, start: UInt64?
        var number = 3
        while let field = fields.next() {
            number += 1
            switch number {
            case 14: user = ByteFields.decimal(field)
            case 15: system = ByteFields.decimal(field)
            case 22: start = ByteFields.decimal(field)
            default: break
            }
            if number >= 22 { break }
        }
        guard let user, let system, let start else { return nil }
        return Stat(state: Character(Unicode.Scalar(letter)), userTicks: user, systemTicks: system, startTimeTicks: start)
    }

    static func parseSchedStat(bytes: ArraySlice<UInt8>) -> SchedStat? {
        var fields = ByteFields(bytes)
        guard let first = fields.next(), let second = fields.next(),
            let onCPU = ByteFields.decimal(first), let queue = ByteFields.decimal(second)
        else { return nil }
        let timeslices = fields.next().flatMap(ByteFields.decimal) ?? 0
        return SchedStat(onCPUNanoseconds: onCPU, runQueueNanoseconds: queue, timeslices: timeslices)
    }

    /// `voluntary_ctxt_switches:\t12` from `status` (not the `nonvoluntary_` line after it).
    static func parseVoluntarySwitches(bytes: ArraySlice<UInt8>) -> UInt64? {
        var fields = ByteFields(bytes)
        while let field = fields.next() {
            if field.elementsEqual("voluntary_ctxt_switches:".utf8) { return fields.next().flatMap(ByteFields.decimal) }
        }
        return nil
    }

    static func parseSyscall(bytes: ArraySlice<UInt8>) -> SyscallState? {
        var fields = ByteFields(bytes)
        guard let first = fields.next() else { return nil }
        if first.elementsEqual("running".utf8) { return .running }
        guard let number = ByteFields.signedDecimal(first) else { return nil }
        if number < 0 {
            guard let sp = fields.next().flatMap(ByteFields.hex), let pc = fields.next().flatMap(ByteFields.hex) else {
                return nil
            }
            return .blockedOutsideSyscall(stackPointer: sp, programCounter: pc)
        }
        var values: [UInt] = []
        values.reserveCapacity(8)
        while let field = fields.next(), values.count < 8 {
            guard let value = ByteFields.hex(field) else { return nil }
            values.append(value)
        }
        guard values.count == 8 else { return nil }
        return .inSyscall(number: number, arguments: Array(values[0..<6]), stackPointer: values[6], programCounter: values[7])
    }

    static func statusField(_ name: String, in status: String) -> String? {
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }
}

import Foundation

#if canImport(Glibc)
import Glibc
#endif
