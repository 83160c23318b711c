@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// The /proc files of one thread, opened once and re-read with `pread` into one buffer: no path
/// lookups and no allocations per sample. Used by one watchdog thread at a time.
final class ProcTaskFiles {
    let tid: Int32
    private let stat: Int32
    private let schedStat: Int32
    private let syscall: Int32
    private let status: Int32
    private var buffer = [UInt8](repeating: 0, count: 1024)
    /// `status` is longer (about 1.5 KB); its buffer is made at its first read.
    private var statusBuffer: [UInt8] = []

    init?(tid: Int32) {
        let directory = "/proc/self/task/\(tid)/"
        stat = open(directory + "stat", O_RDONLY | O_CLOEXEC)
        schedStat = open(directory + "schedstat", O_RDONLY | O_CLOEXEC)
        syscall = open(directory + "syscall", O_RDONLY | O_CLOEXEC)
        status = open(directory + "status", O_RDONLY | O_CLOEXEC)
        self.tid = tid
        if stat < 0 || schedStat < 0 || syscall < 0 || status < 0 {
            return nil
        }
    }

    deinit {
        for fd in [stat, schedStat, syscall, status] where fd >= 0 { close(fd) }
    }

    private func read<T>(_ fd: Int32, _ parse: (ArraySlice<UInt8>) -> T?) -> T? {
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return parse(buffer[0..<count])
    }

    func readStat() -> ProcStat? { read(stat, ProcStat.parse(bytes:)) }
    func readSchedStat() -> ProcTask.SchedStat? { read(schedStat, ProcTask.parseSchedStat(bytes:)) }
    func readSyscall() -> ProcTask.SyscallState? { read(syscall, ProcTask.parseSyscall(bytes:)) }

    /// The open `syscall`, `schedstat` and `status` files, for the capture code to read again right
    /// before it signals.
    var syscallDescriptor: Int32 { syscall }
    var schedStatDescriptor: Int32 { schedStat }
    var statusDescriptor: Int32 { status }

    /// Times the thread gave up its CPU to wait (`voluntary_ctxt_switches` in `status`): a
    /// blocking call, or an idle pool worker parking between jobs. Computing never moves it.
    func readVoluntarySwitches() -> UInt64? {
        readStatus(ProcStatus.voluntarySwitches(bytes:))
    }

    /// The thread's tracer (`TracerPid` in `status`; 0: none).
    func readTracerPID() -> Int32? {
        readStatus(ProcStatus.tracerPID(bytes:))
    }

    private func readStatus<T>(_ parse: (ArraySlice<UInt8>) -> T?) -> T? {
        if statusBuffer.isEmpty { statusBuffer = [UInt8](repeating: 0, count: 4096) }
        let count = statusBuffer.withUnsafeMutableBytes { pread(status, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return parse(statusBuffer[0..<count])
    }
}
