import CHangWatchCapture
import Foundation
import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// The monitor's heartbeat file, `.heartbeat-<pid>` in its report directory: a 256-byte shared
/// mapping the watchdog thread updates on every wake-up (plain stores and `clock_gettime`, no
/// other system call), so the host agent can see that the watchdog is alive, what it last saw the
/// loop do, and how many hangs it found. The layout is `MonitorHeartbeat` in HangWatchReport.
///
/// Only the watchdog thread ticks. Removed on `stop()`; a file left by a crashed process is the
/// agent's to clean up.
final class HeartbeatPublisher: @unchecked Sendable {
    let path: String
    private let page: UnsafeMutablePointer<hw_heartbeat>

    enum State: UInt64 {
        case stopped = 0, idle = 1, watching = 2, recording = 3, paused = 4
    }

    /// Creates (or takes over) the file and maps it; nil when that fails (the monitor runs without).
    init?(
        directory: String, access: ReportStore.Access, interval: Duration, thresholdMicroseconds: UInt64,
        loopHistogram: UnsafePointer<hw_loop_histogram>? = nil
    ) {
        path = directory + "/" + MonitorHeartbeat.fileName(pid: getpid())
        let mode: mode_t = access == .private ? 0o600 : 0o640
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid(),
            // Blocks allocated now, not at the first store into the mapping: on a full disk a store
            // into a sparse page is a SIGBUS that would kill the service. Fails with ENOSPC instead.
            posix_fallocate(fd, 0, off_t(HW_HEARTBEAT_SIZE)) == 0,
            let mapping = mmap(nil, Int(HW_HEARTBEAT_SIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
            mapping != MAP_FAILED
        else {
            // Nothing half-made left behind (on a full disk, an empty file).
            unlink(path)
            return nil
        }
        page = mapping.bindMemory(to: hw_heartbeat.self, capacity: 1)
        hw_heartbeat_init(
            page, UInt64(getpid()), ProcessSnapshot.processStartTimeTicks(),
            UInt64(DurationText.nanoseconds(interval) / 1_000_000), thresholdMicroseconds, loopHistogram)
    }

    deinit {
        munmap(page, Int(HW_HEARTBEAT_SIZE))
    }

    func tick(
        _ state: State, activityWord: UInt64, hangsDetected: UInt64, thresholdMicroseconds: UInt64,
        loopHistogram: UnsafePointer<hw_loop_histogram>? = nil
    ) {
        hw_heartbeat_tick(page, state.rawValue, activityWord, hangsDetected, thresholdMicroseconds, loopHistogram)
    }

    /// The monitor stopped: say so, and remove the file.
    func retire() {
        hw_heartbeat_tick(page, State.stopped.rawValue, 0, 0, 0, nil)
        unlink(path)
    }
}
