@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// What `/proc/<pid>` says of a process: the facts `hangwatch dump` checks a heartbeat against,
/// read through the one `/proc` reader (`ProcStat`, `ProcStatus`).
package enum ProcessFacts {
    /// The ids of the process's threads (`/proc/<pid>/task`).
    static func threads(_ pid: Int32) -> Set<Int32> {
        guard let directory = opendir("/proc/\(pid)/task") else { return [] }
        defer { closedir(directory) }
        var tids: Set<Int32> = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let tid = Int32(name) { tids.insert(tid) }
        }
        return tids
    }

    /// Everything a heartbeat is checked against, read now (after the heartbeat, so that a pid
    /// reused meanwhile shows as another start time). Nil when the process is gone.
    static func read(_ pid: Int32) -> HeartbeatTrust.ProcessFacts? {
        guard let uid = ProcStatus.read(pid: pid)?.realUID else { return nil }
        return HeartbeatTrust.ProcessFacts(pid: pid, uid: uid, startTicks: ProcStat.read(pid: pid)?.startTimeTicks, threads: threads(pid))
    }

    /// This system's real-time signals, `SIGRTMIN()...SIGRTMAX()` (the C library keeps the first
    /// few for itself, so they are known at run time only).
    static var realTimeSignals: ClosedRange<Int32> {
        __libc_current_sigrtmin()...__libc_current_sigrtmax()
    }
}
