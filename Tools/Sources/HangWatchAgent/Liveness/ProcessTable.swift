import Synchronization
@_spi(Internal) import HangWatchReport

/// Where the agent looks processes up: `/proc`, or a script in tests.
protocol ProcessTable: Sendable {
    /// The `stat` of process `pid` (its state and start time), or nil when there is no such process.
    func status(of pid: Int32) -> ProcStat?
    /// The pid the agent knows a process by that says of itself (in its heartbeat, its reports) that
    /// it is `pid` in pid namespace `pidNamespace`, started at `startTicks`: `pid` itself in the
    /// agent's own namespace (or an unknown one); in another (a container's) the host's pid of the
    /// process that matches all three, nil when none runs.
    func hostPID(of pid: Int32, pidNamespace: UInt64?, startTicks: UInt64) -> Int32?
}

extension ProcessTable {
    /// The `stat` of the process that says it is `pid` in `pidNamespace`, started at `startTicks`
    /// (`hostPID`); nil when it is gone. In the agent's own namespace a pid now another process's
    /// is returned as it is, for `HangFinisher.exitReason` to tell a reused pid.
    func status(of pid: Int32, pidNamespace: UInt64?, startTicks: UInt64) -> ProcStat? {
        hostPID(of: pid, pidNamespace: pidNamespace, startTicks: startTicks).flatMap { status(of: $0) }
    }
}

/// The processes of this host, from `/proc`. Only looked at: never signalled or traced.
final class ProcFileSystem: ProcessTable {
    private let ownNamespace = NamespacedProcess.ownPIDNamespace
    /// Namespaced processes found (pid, namespace, start) -> host pid, checked again at each use.
    private let found = Mutex<[Identity: Int32]>([:])

    private struct Identity: Hashable {
        var pid: Int32
        var pidNamespace: UInt64
        var startTicks: UInt64
    }

    func status(of pid: Int32) -> ProcStat? { ProcStat.read(pid: pid) }

    func hostPID(of pid: Int32, pidNamespace: UInt64?, startTicks: UInt64) -> Int32? {
        guard let pidNamespace, pidNamespace != 0, pidNamespace != ownNamespace else { return pid }
        let identity = Identity(pid: pid, pidNamespace: pidNamespace, startTicks: startTicks)
        if let known = found.withLock({ $0[identity] }),
            NamespacedProcess.matches(known, pid: pid, pidNamespace: pidNamespace, startTicks: startTicks)
        {
            return known
        }
        let host = NamespacedProcess.hostPID(of: pid, pidNamespace: pidNamespace, startTicks: startTicks)
        found.withLock { $0[identity] = host }
        return host
    }
}
