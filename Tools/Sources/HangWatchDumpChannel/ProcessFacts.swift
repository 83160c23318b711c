@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// What `/proc/<pid>` says of a process: the facts `hangwatch dump` checks a heartbeat against,
/// read through the one `/proc` reader (`ProcStat`, `ProcStatus`).
package enum ProcessFacts {
    /// Everything a heartbeat is checked against, read now (after the heartbeat, so that a pid
    /// reused meanwhile shows as another start time). Nil when the process is gone. In a pid
    /// namespace of its own (a container's), its heartbeat names it and its threads by that
    /// namespace's ids: `NSpid` and each thread's maps them to this reader's.
    static func read(_ pid: Int32) -> HeartbeatTrust.ProcessFacts? {
        guard let status = ProcStatus.read(pid: pid), let uid = status.realUID else { return nil }
        return HeartbeatTrust.ProcessFacts(
            pid: pid, uid: uid, startTicks: ProcStat.read(pid: pid)?.startTimeTicks, threads: NamespacedProcess.threads(of: pid),
            namespacePID: NamespacedProcess.namespacePIDs(status: status).last, pidNamespace: NamespacedProcess.pidNamespace(of: String(pid)),
            mappedFiles: ProcMaps.sharedFiles(pid: pid) ?? [])
    }

    /// This system's real-time signals, `SIGRTMIN()...SIGRTMAX()` (the C library keeps the first
    /// few for itself, so they are known at run time only).
    static var realTimeSignals: ClosedRange<Int32> {
        __libc_current_sigrtmin()...__libc_current_sigrtmax()
    }
}
