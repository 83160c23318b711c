import Foundation
@_spi(Internal) import HangWatchReport
import Logging
import Synchronization

/// What the monitors of a process writing to one report directory share, one per directory
/// (`ProcessRuntime.directories`): the writer (one rate limit, one fold of repeats, one retention:
/// the same culprit on two loops is one report counting both) with its hold-back lane, and the
/// process's heartbeat file there with its lane (`HeartbeatLane`), both lanes of the process's
/// watchdog. A directory is one service's: its `Settings` are the same for every monitor that
/// writes to it, and a start whose settings differ is refused, naming the setting. Opened when the
/// first monitor's start is made, closed (held reports written, the heartbeat removed) when the last
/// one stops.
final class SharedReportDirectory: Sendable {
    /// The settings that are the directory's, not one monitor's.
    struct Settings: Equatable, Sendable {
        var serviceName: String
        var serviceVersion: String?
        var sharedWithAgent: Bool
        var maxReports: Int
        var maxReportBytes: UInt64
        var reportBurst: Int
        var reportsPerMinute: Int
        var repeatWindow: Duration
        var heartbeatInterval: Duration
        var captureSignal: Int32

        init(_ configuration: HangMonitor.Configuration) {
            serviceName = configuration.serviceName
            serviceVersion = configuration.serviceVersion
            sharedWithAgent = configuration.sharedWithAgent
            maxReports = configuration.maxReports
            maxReportBytes = configuration.maxReportBytes
            reportBurst = configuration.reportBurst
            reportsPerMinute = configuration.reportsPerMinute
            repeatWindow = configuration.repeatWindow
            heartbeatInterval = configuration.heartbeatInterval
            captureSignal = configuration.captureSignal ?? CaptureSignal.defaultSignal
        }

        /// The first setting in which `other` differs, as the configuration names it, with both values.
        func firstDifference(from other: Settings) -> (key: String, value: String, theirs: String)? {
            let fields: [(String, String, String)] = [
                ("serviceName", serviceName, other.serviceName),
                ("serviceVersion", serviceVersion ?? "(none)", other.serviceVersion ?? "(none)"),
                ("sharedWithAgent", "\(sharedWithAgent)", "\(other.sharedWithAgent)"),
                ("maxReports", "\(maxReports)", "\(other.maxReports)"),
                ("maxReportBytes", "\(maxReportBytes)", "\(other.maxReportBytes)"),
                ("reportBurst", "\(reportBurst)", "\(other.reportBurst)"),
                ("reportsPerMinute", "\(reportsPerMinute)", "\(other.reportsPerMinute)"),
                ("repeatWindow", "\(repeatWindow)", "\(other.repeatWindow)"),
                ("heartbeatInterval", "\(heartbeatInterval)", "\(other.heartbeatInterval)"),
                ("captureSignal", "\(captureSignal)", "\(other.captureSignal)"),
            ]
            return fields.first { $0.1 != $0.2 }.map { (key: $0.0, value: $0.1, theirs: $0.2) }
        }
    }

    let settings: Settings
    let store: ReportStore
    let writer: ReportWriter
    /// Nil without a heartbeat (`heartbeatInterval` 0, or the file could not be made).
    let heartbeat: HeartbeatLane?
    /// Answers thread dumps in this directory (with a heartbeat only: the CLI finds a monitor by
    /// it), and takes the pending requests.
    private let dumpServer: (server: DumpServer, requests: @Sendable () -> [UInt64])?
    private let holdBack: ReportHoldBackLane
    /// Raised at close: the directory's lanes finish.
    private let stop = StopFlag()

    /// Opens `store`'s directory for the monitors of `runtime`, as the start that opens it has it:
    /// its `dumpBuilder` names dumps, and its `logger` tells about the heartbeat and dumps.
    init(
        settings: Settings, store: ReportStore, runtime: ProcessRuntime, clock: any MonotonicClock, images: ImageRegistry,
        heartbeatFile: (() throws(SystemCallError) -> HeartbeatPublisher)?, dumps: MonitorWorld.Dumps?, dumpBuilder: ReportBuilder,
        capture: MonitorWorld.Capture, logger: Logger
    ) {
        self.settings = settings
        self.store = store
        writer = ReportWriter(
            store: store, retention: RetentionPolicy(maxReports: settings.maxReports, maxBytes: settings.maxReportBytes),
            policy: ReportPolicy(
                limiter: ReportRateLimiter(burst: settings.reportBurst, perMinute: settings.reportsPerMinute),
                repeats: RepeatTracker(windowMicroseconds: DurationText.microseconds(settings.repeatWindow))),
            images: images, clock: clock, wake: runtime.watchdog.wake)
        holdBack = ReportHoldBackLane(writer: writer, stop: stop)
        var heartbeat: HeartbeatLane?
        if let heartbeatFile {
            do {
                let publisher = try heartbeatFile()
                heartbeat = HeartbeatLane(
                    publisher: publisher, intervalMicroseconds: DurationText.microseconds(settings.heartbeatInterval), stop: stop, clock: clock,
                    poolDelays: { [runtime] owners in
                        runtime.poolWatch.activeOwner().map(owners.contains) == true ? runtime.poolDelays.snapshot : nil
                    })
            } catch {
                logger.warning(
                    "no heartbeat file: the host agent cannot tell whether this monitor's watchdog is alive",
                    metadata: ["hangwatch.directory": "\(store.directory)", "hangwatch.error": "\(error)"])
            }
        }
        self.heartbeat = heartbeat
        if let dumps, heartbeat != nil || !dumps.needHeartbeat {
            dumpServer = (
                DumpServer(logger: logger, store: store, builder: dumpBuilder, images: images, clock: clock, take: { dumps.take(capture) },
                    tasks: dumps.tasks),
                dumps.requests
            )
        } else {
            dumpServer = nil
        }
    }

    /// Its lanes join the watchdog, and it answers dumps.
    func open(_ runtime: ProcessRuntime) {
        runtime.watchdog.add(holdBack)
        if let heartbeat { runtime.watchdog.add(heartbeat) }
        if let dumpServer {
            runtime.dumps.offer(dumpServer.server, signal: settings.captureSignal, from: ObjectIdentifier(self), requests: dumpServer.requests)
        }
    }

    /// The last monitor stopped: no more dumps answered here, the lanes finish, the heartbeat
    /// says so and is removed, and the reports still held for a token are written.
    func close(_ runtime: ProcessRuntime) {
        if dumpServer != nil { runtime.dumps.withdraw(ObjectIdentifier(self)) }
        stop.raise()
        runtime.watchdog.remove(holdBack)
        if let heartbeat {
            runtime.watchdog.remove(heartbeat)
            heartbeat.retire()
        }
        writer.flush()
    }
}
