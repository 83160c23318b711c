@_spi(Internal) import HangWatchReport

/// Where the agent looks processes up: `/proc`, or a script in tests.
protocol ProcessTable: Sendable {
    /// The `stat` of process `pid` (its state and start time), or nil when there is no such process.
    func status(of pid: Int32) -> ProcStat?
}

/// The processes of this host, from `/proc`. Only looked at: never signalled or traced.
struct ProcFileSystem: ProcessTable {
    func status(of pid: Int32) -> ProcStat? { ProcStat.read(pid: pid) }
}
