@_spi(Internal) import HangWatchReport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// When a sleeping thread went off its CPU, on `CLOCK_MONOTONIC`: the scheduler's clock
/// (`se.exec_start` in `/proc/<tid>/sched`, stamped when a thread is put on a CPU, and again when
/// it leaves one to sleep) read against the monotonic clock.
///
/// Each CPU's scheduler clock runs apart from the others and from `CLOCK_MONOTONIC` (it leaves out
/// time spent in interrupts: tens of milliseconds between two CPUs here, drifting by up to a
/// millisecond a second under interrupt load), so the offset is measured on the CPU the thread
/// last ran on: the calling thread moves there, yields (which stamps it), reads its own
/// `exec_start` against the monotonic clock, and moves back. An offset is kept for a second.
/// Nil where the kernel shows no `sched` file (no scheduler statistics).
final class SchedClock: @unchecked Sendable {
    private struct Offset {
        var nanoseconds: Int64
        var measuredAt: UInt64
    }

    private let offsets = Mutex<[Int32: Offset]>([:])
    /// How long a measured offset is trusted, nanoseconds.
    static let offsetLifetime: UInt64 = 1_000_000_000

    /// When thread `tid` of this process, asleep, went off its CPU (`CLOCK_MONOTONIC`, µs).
    func offCPUSince(tid: Int32) -> UInt64? {
        guard let cpu = Self.lastCPU(of: tid), let start = Self.execStart(of: tid), let offset = offset(onCPU: cpu) else { return nil }
        let monotonic = Int64(start) + offset
        return monotonic > 0 ? UInt64(monotonic) / 1000 : nil
    }

    /// How long thread `tid`, asleep, has been off its CPU (µs).
    func offCPU(tid: Int32) -> UInt64? {
        guard let since = offCPUSince(tid: tid) else { return nil }
        let now = UnsafeClock.monotonicNanoseconds() / 1000
        return now > since ? now - since : 0
    }

    private func offset(onCPU cpu: Int32) -> Int64? {
        let now = UnsafeClock.monotonicNanoseconds()
        if let known = offsets.withLock({ $0[cpu] }), now &- known.measuredAt < Self.offsetLifetime { return known.nanoseconds }
        guard let measured = Self.measure(onCPU: cpu) else { return nil }
        offsets.withLock { $0[cpu] = Offset(nanoseconds: measured, measuredAt: now) }
        return measured
    }

    /// `CLOCK_MONOTONIC` minus CPU `cpu`'s scheduler clock, ns (the calling thread visits the CPU).
    static func measure(onCPU cpu: Int32) -> Int64? {
        guard let allowed = UnsafeAffinity.current(), allowed.contains(cpu) else { return nil }
        defer { _ = UnsafeAffinity.set(allowed) }
        guard UnsafeAffinity.set([cpu]) else { return nil }
        sched_yield()
        let monotonic = Int64(UnsafeClock.monotonicNanoseconds())
        guard let start = execStart(of: UnsafeCaptureBridge.currentThreadID()) else { return nil }
        return monotonic - Int64(start)
    }

    /// `se.exec_start` (milliseconds with a fraction) in nanoseconds.
    static func execStart(of tid: Int32) -> UInt64? {
        guard let text = SmallFile.text("/proc/self/task/\(tid)/sched") else { return nil }
        return parseExecStart(text)
    }

    static func parseExecStart(_ text: String) -> UInt64? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("se.exec_start") }),
            let value = line.split(separator: ":").last.map({ $0.trimmingCharacters(in: .whitespaces) }), let milliseconds = Double(value)
        else { return nil }
        return UInt64(milliseconds * 1_000_000)
    }

    /// The CPU the thread last ran on (`stat` field 39).
    static func lastCPU(of tid: Int32) -> Int32? {
        guard let text = SmallFile.text("/proc/self/task/\(tid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 36 ? Int32(fields[36]) : nil
    }
}
