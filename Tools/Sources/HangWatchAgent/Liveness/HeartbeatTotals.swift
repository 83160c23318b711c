import HangWatchReport

/// Turns the running totals that monitors publish in their heartbeats into what is new since the
/// agent last counted, so that each event is counted once.
///
/// Two kinds of totals:
/// - **A monitor's own** (its loop histogram, its recorders' lag histogram, the hangs its rate
///   limit kept back): counted per
///   heartbeat file, from what that file said when last counted.
/// - **The process's** (the pool probe's delays and starvations, kept by whichever monitor runs
///   the process's pool watch, which may hand it to another; the system calls its captures cut
///   short, in the page of every monitor it runs): counted per process (pid and start time), so
///   two monitors of one process, or a pool watch that moved between them, count nothing twice.
///   What is new goes to the service of the heartbeat that showed it first.
///
/// What was counted is kept while a heartbeat cannot be read for a moment (it is being rewritten),
/// and forgotten when its file or process is gone. A total that went backwards belongs to a new
/// monitor (or process) under the same name: all of it is new.
struct HeartbeatTotals {
    struct Process: Hashable {
        var pid: Int32
        var startTimeTicks: UInt64
    }

    /// What one heartbeat added since it (or its process) was last counted.
    struct Added: Equatable {
        var loopBusy: LoopBusyHistogram.Counts?
        var loopLag: LoopBusyHistogram.Counts?
        var hangsSuppressed: UInt64 = 0
        var poolStartDelay: LoopBusyHistogram.Counts?
        var poolStarvations: UInt64 = 0
        var callsCutShort: UInt64 = 0
    }

    private struct MonitorCounted {
        var loopBusy: LoopBusyHistogram.Counts?
        var loopLag: LoopBusyHistogram.Counts?
        var hangsSuppressed: UInt64 = 0
    }

    private struct ProcessCounted {
        var poolStartDelay: LoopBusyHistogram.Counts?
        var poolStarvations: UInt64 = 0
        var callsCutShort: UInt64 = 0
    }

    private var monitors: [SpoolState.Key: MonitorCounted] = [:]
    private var processes: [Process: ProcessCounted] = [:]

    /// Counts `heartbeat`, read from the file `key`: returns what is new.
    mutating func count(_ heartbeat: MonitorHeartbeat, key: SpoolState.Key) -> Added {
        var added = Added()
        let monitor = monitors[key]
        if let loop = heartbeat.loopBusy { added.loopBusy = loop.since(monitor?.loopBusy) }
        if let lag = heartbeat.loopLag { added.loopLag = lag.since(monitor?.loopLag) }
        added.hangsSuppressed = Self.since(heartbeat.hangsSuppressed, monitor?.hangsSuppressed)
        monitors[key] = MonitorCounted(
            loopBusy: heartbeat.loopBusy ?? monitor?.loopBusy, loopLag: heartbeat.loopLag ?? monitor?.loopLag,
            hangsSuppressed: heartbeat.hangsSuppressed)

        let process = Process(pid: heartbeat.pid, startTimeTicks: heartbeat.startTimeTicks)
        var counted = processes[process] ?? ProcessCounted()
        // The pool section is in one monitor's page at a time (the one running the pool watch).
        if let pool = heartbeat.poolStartDelay {
            added.poolStartDelay = pool.since(counted.poolStartDelay)
            added.poolStarvations = Self.since(heartbeat.poolStarvations, counted.poolStarvations)
            counted.poolStartDelay = pool
            counted.poolStarvations = heartbeat.poolStarvations
        }
        // In every monitor's page: only a rise is new (another page may have counted it already).
        if heartbeat.callsCutShort > counted.callsCutShort {
            added.callsCutShort = heartbeat.callsCutShort - counted.callsCutShort
            counted.callsCutShort = heartbeat.callsCutShort
        }
        processes[process] = counted
        return added
    }

    /// Forgets the heartbeat file `key` (it is gone).
    mutating func forget(_ key: SpoolState.Key) {
        monitors[key] = nil
    }

    /// Forgets the processes with none of `pids` (those of the heartbeat files there are, read
    /// or not): a process whose files are all gone.
    mutating func keepProcesses(withPIDs pids: Set<Int32>) {
        processes = processes.filter { pids.contains($0.key.pid) }
    }

    private static func since(_ now: UInt64, _ earlier: UInt64?) -> UInt64 {
        guard let earlier else { return now }
        return now >= earlier ? now - earlier : now
    }
}
