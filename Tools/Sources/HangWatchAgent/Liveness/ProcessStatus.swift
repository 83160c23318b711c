@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// What `/proc/<pid>/stat` says about another process: whether it still runs, and whether it is
/// still the process a report or a heartbeat was written by (a pid and its start time identify a
/// process; a pid alone may have been reused).
struct ProcessStatus: Sendable, Equatable {
    /// Scheduler state letter: `R`, `S`, `D`, `T` (stopped), `t` (traced), `Z` (zombie), ...
    var state: Character
    /// Clock ticks after boot at which the process started (field 22).
    var startTimeTicks: UInt64

    /// Stopped by a signal or a tracer.
    var isStopped: Bool { state == "T" || state == "t" }
    /// Exited, waiting to be reaped: as good as gone.
    var isZombie: Bool { state == "Z" || state == "X" }

    /// Parses the text of `/proc/<pid>/stat`: `pid (comm) state ppid ...`. The name may contain
    /// spaces and parentheses, so the fields resume after the last `)`; the state is field 3 and
    /// the start time field 22. Nil when the text is not such a line.
    static func parse(stat text: some StringProtocol) -> ProcessStatus? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        // After ")": field 3 is the first, field n the (n - 2)th.
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 20, fields[0].count == 1, let state = fields[0].first, state.isLetter,
            let start = UInt64(fields[19])
        else { return nil }
        return ProcessStatus(state: state, startTimeTicks: start)
    }

    /// The status of process `pid`, or nil when there is none (or it cannot be read).
    static func read(pid: Int32) -> ProcessStatus? {
        guard pid > 0, let text = readSmallFile("/proc/\(pid)/stat") else { return nil }
        return parse(stat: text)
    }

    /// A procfs file's text (procfs reports size 0: read until the end), at most 4 KiB.
    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while bytes.count < 4096 {
            // Interrupted reads are made again; any other failure: no status.
            guard let count = try? SystemCall.check("read", path: path, { chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } })
            else { return nil }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Where the agent looks processes up: `/proc`, or a script in tests.
protocol ProcessTable: Sendable {
    /// The status of process `pid`, or nil when there is no such process.
    func status(of pid: Int32) -> ProcessStatus?
}

/// The processes of this host, from `/proc`. Only looked at: never signalled or traced.
struct ProcFileSystem: ProcessTable {
    func status(of pid: Int32) -> ProcessStatus? { ProcessStatus.read(pid: pid) }
}
