import Foundation
@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// The process's heartbeat file in one report directory, `.heartbeat-<pid>`: a 1024-byte shared
/// mapping the watchdog thread updates on every wake-up (plain stores and `clock_gettime`, no
/// other system call), so the host agent can see that the watchdog is alive, what it last saw the
/// directory's loops do, and how many hangs they had. The layout is `MonitorHeartbeat` in
/// HangWatchReport. What it says is gathered by the directory's `HeartbeatLane`.
///
/// Only the watchdog thread ticks. Removed when the last monitor writing to the directory stops;
/// a file left by a crashed process is the agent's to clean up.
final class HeartbeatPublisher: @unchecked Sendable {
    let path: String
    private let page: UnsafeHeartbeatPage
    /// The process's captures that cut a system call short (`ThreadInspection.callsCutShort`).
    private let callsCutShort: @Sendable () -> Int
    /// Whether the page holds the pool section (the watchdog thread only, like every tick).
    private var publishesPool = false
    /// Whether the page holds the lead-up section (the watchdog thread only).
    private var publishesBusyWindow = false
    /// Whether the page holds the lag histogram (the watchdog thread only).
    private var publishesLag = false
    /// The threshold the page says: the one it was made with until a tick names another.
    private var thresholdMicroseconds: UInt64

    enum State: UInt64 {
        case stopped = 0, idle = 1, watching = 2, recording = 3, paused = 4
    }

    /// Creates the file and maps it. Throws the system call that failed (the directory's monitors
    /// then run without a heartbeat).
    init(
        directory: String, access: ReportStore.Access, interval: Duration, thresholdMicroseconds: UInt64,
        callsCutShort: @escaping @Sendable () -> Int = { 0 },
        dumpSignal: Int32 = 0, taskLayoutUnrecognised: Bool = false, serviceVersion: ServiceVersion? = nil
    ) throws(SystemCallError) {
        self.callsCutShort = callsCutShort
        self.thresholdMicroseconds = thresholdMicroseconds
        let pidNamespace = NamespacedProcess.ownPIDNamespace
        let path = directory + "/" + MonitorHeartbeat.fileName(pid: getpid(), pidNamespace: pidNamespace)
        let mode: mode_t = access == .private ? 0o600 : 0o640
        let size = UnsafeHeartbeatPage.size
        let fd = try Self.openOwnFile(path, mode: mode)
        defer { close(fd) }
        do {
            // Blocks allocated now, not at the first store into the mapping: on a full disk a store
            // into a sparse page is a SIGBUS that would kill the service. Fails with ENOSPC instead.
            let allocated = posix_fallocate(fd, 0, off_t(size))
            guard allocated == 0 else { throw SystemCallError(call: "posix_fallocate", path: path, code: allocated) }
            let mapping = try SystemCall.check("mmap", path: path) { () -> UnsafeMutableRawPointer? in
                let mapping = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                return mapping == MAP_FAILED ? nil : mapping
            }
            page = UnsafeHeartbeatPage(
                mapping: mapping, pid: UInt64(getpid()), startTimeTicks: ProcessSnapshot.processStartTimeTicks(),
                intervalMilliseconds: UInt64(DurationText.nanoseconds(interval) / 1_000_000),
                thresholdMicroseconds: thresholdMicroseconds, histogram: nil)
            page.captureSignal(dumpSignal)
            page.pidNamespace(pidNamespace ?? 0)
            page.taskLayoutUnrecognised(taskLayoutUnrecognised)
            page.serviceVersion(serviceVersion?.version ?? "")
            self.path = path
        } catch {
            // Nothing half-made left behind (on a full disk, an empty file).
            unlink(path)
            throw error as? SystemCallError ?? SystemCallError(call: "mmap", path: path, code: EIO)
        }
    }

    /// Opens the heartbeat file at `path` for writing, made by this process only: created with
    /// `O_EXCL` and `O_NOFOLLOW`; an existing file is used only when it is a regular file with one
    /// link, owned by this user, whose page names this very process (another monitor of it writes
    /// there too); one an earlier process with this pid left is removed and made anew. Anything else
    /// (a symlink, a hard link, another user's file, a FIFO) is refused with `EPERM`: a root-run
    /// reader trusts this file to name the process and its signal.
    static func openOwnFile(_ path: String, mode: mode_t) throws(SystemCallError) -> Int32 {
        for _ in 0..<2 {
            let created = SystemCall.result("open", path: path) { open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }
            switch created {
            case .success(let fd): return fd
            case .failure(let error) where error.code != EEXIST: throw error
            case .failure: break
            }
            let existing: Int32
            switch SystemCall.result("open", path: path, { open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }) {
            case .success(let fd): existing = fd
            case .failure(let error) where error.code == ENOENT: continue  // removed meanwhile: create it
            case .failure(let error): throw SystemCallError(call: "open", path: path, code: error.code == ELOOP ? EPERM : error.code)
            }
            var info = stat()
            guard fstat(existing, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1, info.st_uid == geteuid() else {
                close(existing)
                throw SystemCallError(call: "open", path: path, code: EPERM)
            }
            var bytes = [UInt8](repeating: 0, count: MonitorHeartbeat.size)
            let count = bytes.withUnsafeMutableBytes { pread(existing, $0.baseAddress, MonitorHeartbeat.size, 0) }
            if count >= MonitorHeartbeat.minimumSize, let page = MonitorHeartbeat.decode(Array(bytes.prefix(count))),
                page.pid == getpid(), page.startTimeTicks == ProcessSnapshot.processStartTimeTicks()
            {
                return existing
            }
            // An earlier process's (same pid, another start), or a page never written: made anew.
            close(existing)
            unlink(path)
        }
        throw SystemCallError(call: "open", path: path, code: EEXIST)
    }

    /// Publishes the page: `thresholdMicroseconds` nil keeps the threshold the page says (no
    /// monitor of the directory is running to name one: the directory opens before its first
    /// monitor begins); `pool`, the pool watch's delays while one of the directory's monitors runs
    /// it (nil: none does; the section is cleared once); `busyWindow`, the busiest recorder's
    /// window (nil: no monitor keeps one; the section is cleared once); `lag`, the recorders' lag
    /// histogram, summed (nil: no monitor keeps a recorder; cleared once).
    func tick(
        _ state: State, activityWord: UInt64, hangsDetected: UInt64, hangsSuppressed: UInt64 = 0, thresholdMicroseconds: UInt64?,
        loopHistogram: UnsafeLoopHistogram? = nil, pool: HangMonitor.PoolProbeDelays? = nil, busyWindow: RecorderBusyWindow? = nil,
        lag: UnsafeLoopHistogram? = nil
    ) {
        if let thresholdMicroseconds { self.thresholdMicroseconds = thresholdMicroseconds }
        // The process's count (every monitor's captures and the pool watch's looks): the agent
        // counts it once per process, however many monitors publish it.
        page.tick(
            state: state.rawValue, activityWord: activityWord, hangsDetected: hangsDetected, hangsSuppressed: hangsSuppressed,
            callsCutShort: UInt64(callsCutShort()),
            thresholdMicroseconds: self.thresholdMicroseconds, histogram: loopHistogram)
        // Written while a monitor of the directory runs the pool watch, and cleared once when none does.
        if pool != nil || publishesPool {
            page.pool(counts: pool?.counts, totalNanoseconds: pool?.totalNanoseconds ?? 0, starvations: UInt64(pool?.starvations ?? 0))
        }
        publishesPool = pool != nil
        if let busyWindow, busyWindow.windowUnits > 0 {
            page.leadUp(
                windowNanoseconds: RecorderBusyWindow.nanoseconds(units: busyWindow.windowUnits),
                busyNanoseconds: RecorderBusyWindow.nanoseconds(units: busyWindow.busyUnits),
                longestNanoseconds: RecorderBusyWindow.nanoseconds(units: busyWindow.longestUnits))
            publishesBusyWindow = true
        } else if publishesBusyWindow {
            page.leadUp(windowNanoseconds: 0, busyNanoseconds: 0, longestNanoseconds: 0)
            publishesBusyWindow = false
        }
        if lag != nil || publishesLag { page.lag(lag) }
        publishesLag = lag != nil
    }

    /// The last monitor of the directory stopped: say so, and remove the file.
    func retire() {
        page.tick(
            state: State.stopped.rawValue, activityWord: 0, hangsDetected: 0, hangsSuppressed: 0, callsCutShort: 0, thresholdMicroseconds: 0,
            histogram: nil)
        unlink(path)
    }
}
