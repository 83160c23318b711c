@_spi(Internal) import HangWatchReport
import Logging

/// Watches the watchers: reads each monitor's heartbeat, judges it against its process
/// (`MonitorHealth`), warns once per episode about a stopped process or a silent watchdog (and
/// says when it is healthy again), removes the heartbeats of processes that are gone, adds up
/// the loop and pool histograms monitors publish, and counts the hangs their rate limits kept
/// from being written (`hangwatch_reports_dropped_total{reason="rate_limit"}`), the starved pools
/// and the system calls their captures cut short (`HeartbeatTotals`: each counted once).
struct MonitorWatch {
    let spool: Spool
    let processes: any ProcessTable
    let clock: any AgentClock
    let exports: ExportHub
    let logger: Logger

    func check(_ state: SpoolState, configuration: AgentConfiguration) {
        let now = clock.monotonicNanoseconds
        for (key, file) in state.heartbeatFiles {
            let heartbeat: MonitorHeartbeat
            do {
                heartbeat = try MonitorHeartbeat.read(path: spool.path(of: file))
            } catch {
                state.monitors[key] = nil
                state.lastWatched[key] = nil
                continue
            }
            let health = MonitorHealth.assess(
                heartbeat,
                status: processes.status(of: heartbeat.pid, pidNamespace: heartbeat.pidNamespace, startTicks: heartbeat.startTimeTicks),
                nowMonotonicNanoseconds: now, grace: configuration.heartbeatGrace,
                frozen: {
                    processes.hostPID(of: heartbeat.pid, pidNamespace: heartbeat.pidNamespace, startTicks: heartbeat.startTimeTicks)
                        .flatMap { CgroupFreezer.isFrozen(pid: $0) } == true
                })
            let previous = state.monitors[key]
            let metadata: Logger.Metadata = [
                "hangwatch.service": "\(key.service)", "hangwatch.pid": "\(heartbeat.pid)", "hangwatch.state": "\(health.summary)",
            ]
            switch health {
            case .stale:
                do {
                    try spool.remove(file)
                    logger.debug("removed a heartbeat left by a process that is gone", metadata: metadata)
                } catch {
                    logger.debug(
                        "cannot remove a stale heartbeat", metadata: ["hangwatch.path": "\(spool.path(of: file))", "hangwatch.error": "\(error)"])
                }
                state.heartbeatFiles[key] = nil
                state.monitors[key] = nil
                state.lastWatched[key] = nil
                state.heartbeatTotals.forget(key)
                continue
            case .processStopped, .watchdogSilent:
                if previous.map({ !$0.health.isProblem }) ?? true {
                    logger.warning(
                        health == .processStopped ? "a monitored process is stopped" : "a monitor's watchdog has stopped ticking",
                        metadata: metadata)
                }
            case .healthy, .stopped:
                if previous?.health.isProblem == true { logger.info("a flagged monitor is healthy again", metadata: metadata) }
            }
            // Said once per monitor: what it cannot read in its process (its reports say it too).
            if heartbeat.taskLayoutUnrecognised && previous?.heartbeat?.taskLayoutUnrecognised != true {
                logger.warning(
                    "a monitor cannot read its Swift runtime's task layout: async labels and computing pool jobs unavailable",
                    metadata: metadata)
            }
            let added = state.heartbeatTotals.count(heartbeat, key: key)
            if let loop = added.loopBusy { state.loopBusy[key.service, default: .zero].add(loop) }
            if let lag = added.loopLag { state.loopLag[key.service, default: .zero].add(lag) }
            if let pool = added.poolStartDelay { state.poolStartDelay[key.service, default: .zero].add(pool) }
            // Only the monitor running the process's pool watch publishes its section.
            if heartbeat.poolStartDelay != nil { state.poolStarvations[key.service, default: 0] += added.poolStarvations }
            state.callsCutShort[key.service, default: 0] += added.callsCutShort
            if added.hangsSuppressed > 0 { exports.reportsDropped(.rateLimit, count: Int(clamping: added.hangsSuppressed)) }
            countMonitoredTime(heartbeat, health: health, key: key, now: now, in: state)
            state.monitors[key] = (heartbeat, health)
        }
        state.heartbeatTotals.keepProcesses(withPIDs: Set(state.heartbeatFiles.keys.compactMap { MonitorHeartbeat.pid(fromFileName: $0.name) }))
    }

    /// Adds the time since the last look to the monitor's service and version when this look and
    /// the last both found it watching: healthy (its watchdog ticking, its process running) and
    /// idle, watching or recording (not stopped or paused by a debugger). A look that finds it
    /// otherwise counts nothing and starts over; so does one of another process under the name.
    private func countMonitoredTime(
        _ heartbeat: MonitorHeartbeat, health: MonitorHealth, key: SpoolState.Key, now: UInt64, in state: SpoolState
    ) {
        let watching = health == .healthy && [.idle, .watching, .recording].contains(heartbeat.state)
        guard watching else {
            state.lastWatched[key] = nil
            return
        }
        if let last = state.lastWatched[key], last.pid == heartbeat.pid, last.startTimeTicks == heartbeat.startTimeTicks,
            now > last.atNanoseconds
        {
            let release = ServiceRelease(service: key.service, version: heartbeat.serviceVersion ?? MonitoredTime.unversioned)
            state.monitoredSeconds[release, default: 0] += Double(now - last.atNanoseconds) / 1e9
        }
        state.lastWatched[key] = (heartbeat.pid, heartbeat.startTimeTicks, now)
    }
}
