@_spi(Internal) import HangWatchReport

/// What /proc says about one thread of this process (`/proc/self/task/<tid>/...`).
/// Parsing is separate from reading so it can be tested with fixed text.
package struct ProcTask: Sendable {
    let tid: Int32

    private var directory: String { "/proc/self/task/\(tid)" }

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

    /// `stat`: scheduler state, CPU ticks, start time.
    func stat() -> ProcStat? {
        ProcStat.read(path: directory + "/stat")
    }

    func schedStat() -> SchedStat? {
        SmallFile.text(directory + "/schedstat").flatMap(Self.parseSchedStat)
    }

    func syscall() -> SyscallState? {
        SmallFile.text(directory + "/syscall").flatMap(Self.parseSyscall)
    }

    /// Signals blocked by the thread (`SigBlk` in `status`), bit n-1 for signal n.
    func blockedSignals() -> UInt64? {
        ProcStatus.read(path: directory + "/status")?.blockedSignals
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

    static func parseSchedStat(_ text: String) -> SchedStat? { parseSchedStat(bytes: Array(text.utf8)[...]) }
    static func parseSyscall(_ text: String) -> SyscallState? { parseSyscall(bytes: Array(text.utf8)[...]) }

    static func parseSchedStat(bytes: ArraySlice<UInt8>) -> SchedStat? {
        var fields = ByteFields(bytes)
        guard let first = fields.next(), let second = fields.next(),
            let onCPU = ByteFields.decimal(first), let queue = ByteFields.decimal(second)
        else { return nil }
        let timeslices = fields.next().flatMap(ByteFields.decimal) ?? 0
        return SchedStat(onCPUNanoseconds: onCPU, runQueueNanoseconds: queue, timeslices: timeslices)
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
}

import Foundation

#if canImport(Glibc)
import Glibc
#endif
