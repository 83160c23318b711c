import HangWatchReport
import Logging

/// Watches the watchers: reads each monitor's heartbeat, judges it against its process
/// (`MonitorHealth`), warns once per episode about a stopped process or a silent watchdog (and
/// says when it is healthy again), removes the heartbeats of processes that are gone, and adds up
/// the loop histograms monitors publish.
struct MonitorWatch {
    let spool: Spool
    let processes: any ProcessTable
    let clock: any AgentClock
    let logger: Logger

    func check(_ state: SpoolState, configuration: AgentConfiguration) {
        let now = clock.monotonicNanoseconds
        for (key, file) in state.heartbeatFiles {
            let heartbeat: MonitorHeartbeat
            do {
                heartbeat = try MonitorHeartbeat.read(path: spool.path(of: file))
            } catch {
                state.monitors[key] = nil
                continue
            }
            let health = MonitorHealth.assess(
                heartbeat, status: processes.status(of: heartbeat.pid), nowMonotonicNanoseconds: now, grace: configuration.heartbeatGrace)
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
            if let loop = heartbeat.loopBusy {
                state.loopBusy[key.service, default: .zero].add(loop.since(previous?.heartbeat?.loopBusy))
            }
            state.monitors[key] = (heartbeat, health)
        }
    }
}
