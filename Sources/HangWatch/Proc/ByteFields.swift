/// Space-separated fields of a /proc file, and number parsing without building strings: the
/// watchdog reads several proc files per sample.
struct ByteFields: IteratorProtocol {
    private var remaining: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) {
        remaining = bytes
    }

    mutating func next() -> ArraySlice<UInt8>? {
        guard let start = remaining.firstIndex(where: { !Self.isSeparator($0) }) else { return nil }
        let rest = remaining[start...]
        let end = rest.firstIndex(where: Self.isSeparator) ?? rest.endIndex
        remaining = rest[end...]
        return rest[start..<end]
    }

    private static func isSeparator(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0a || byte == 0x09
    }

    static func decimal(_ field: ArraySlice<UInt8>) -> UInt64? {
        guard !field.isEmpty, field.count <= 20 else { return nil }
        var value: UInt64 = 0
        for byte in field {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            let (multiplied, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = multiplied + UInt64(byte - 0x30)
        }
        return value
    }

    static func signedDecimal(_ field: ArraySlice<UInt8>) -> Int? {
        if field.first == UInt8(ascii: "-") {
            return decimal(field.dropFirst()).flatMap { $0 <= UInt64(Int.max) ? -Int($0) : nil }
        }
        return decimal(field).flatMap { $0 <= UInt64(Int.max) ? Int($0) : nil }
    }

    /// `0x1f`, `1f`.
    static func hex(_ field: ArraySlice<UInt8>) -> UInt? {
        var digits = field
        if digits.count >= 2, digits.first == UInt8(ascii: "0"),
            digits[digits.startIndex + 1] == UInt8(ascii: "x") || digits[digits.startIndex + 1] == UInt8(ascii: "X")
        {
            digits = digits.dropFirst(2)
        }
        guard !digits.isEmpty, digits.count <= 16 else { return nil }
        var value: UInt = 0
        for byte in digits {
            let digit: UInt
            switch byte {
            case 0x30...0x39: digit = UInt(byte - 0x30)
            case 0x61...0x66: digit = UInt(byte - 0x61 + 10)
            case 0x41...0x46: digit = UInt(byte - 0x41 + 10)
            default: return nil
            }
            value = value << 4 | digit
        }
        return value
    }
}

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

    func readStat() -> ProcTask.Stat? { read(stat, ProcTask.parseStat(bytes:)) }
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
        if statusBuffer.isEmpty { statusBuffer = [UInt8](repeating: 0, count: 4096) }
        let count = statusBuffer.withUnsafeMutableBytes { pread(status, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return ProcTask.parseVoluntarySwitches(bytes: statusBuffer[0..<count])
    }
}

#if canImport(Glibc)
import Glibc
#endif
