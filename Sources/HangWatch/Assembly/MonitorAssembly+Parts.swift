import Foundation
@_spi(Internal) import HangWatchReport
import Logging

/// The parts `MonitorAssembly.init` makes, one function each, from the configuration and the world.
extension MonitorAssembly {
    /// The report directory, made (with the configured access) and cleared of stale temporary files
    /// and of thread dumps' answers nobody took.
    static func preparedStore(_ configuration: HangMonitor.Configuration) throws -> ReportStore {
        let store = ReportStore(
            directory: configuration.reportDirectory, access: configuration.sharedWithAgent ? .sharedWithAgent : .private)
        do {
            try store.prepare()
            try store.removeStaleTemporaryFiles(olderThan: 3600)
            try store.removeStaleDumpAnswers(olderThan: 60)
        } catch {
            throw HangMonitorError.reportDirectoryUnusable(path: configuration.reportDirectory, reason: "\(error)")
        }
        return store
    }

    static func reportBuilder(
        _ configuration: HangMonitor.Configuration, world: MonitorWorld, signal: Int32, kind: ActivitySourceKind
    ) -> ReportBuilder {
        let environment = world.environment
        return ReportBuilder(
            service: configuration.serviceName, host: world.host, pid: world.pid, process: world.process,
            signal: signal, maxFrames: configuration.maxFrames,
            wallClock: { environment.date(ofMicroseconds: $0) }, source: kind, unavailable: world.taskLayout.description.map { [$0] },
            serviceVersion: world.serviceVersion(configuration.serviceVersion))
    }

    /// The writer of the monitor's reports: the sharing's, when monitors share one (the first to
    /// start makes it; they share the watchdog whose `wake` it posts too).
    static func reportWriter(
        _ configuration: HangMonitor.Configuration, owner: Owner, world: MonitorWorld, store: ReportStore, builder: ReportBuilder,
        images: ImageRegistry, wake: WatchdogWake
    ) -> ReportWriter {
        let makeWriter = {
            ReportWriter(
                store: store,
                retention: RetentionPolicy(maxReports: configuration.maxReports, maxBytes: configuration.maxReportBytes),
                policy: ReportPolicy(
                    limiter: ReportRateLimiter(burst: configuration.reportBurst, perMinute: configuration.reportsPerMinute),
                    repeats: RepeatTracker(windowMicroseconds: DurationText.microseconds(configuration.repeatWindow))),
                enricher: owner.enricher, statistics: owner.statistics, logger: owner.logger, builder: builder, images: images,
                clock: world.clock, wake: wake)
        }
        return owner.sharing?.writer(orMake: makeWriter) ?? makeWriter()
    }

    /// The heartbeat file the host agent reads, when one is configured and can be made (else a
    /// warning: the agent cannot tell whether this watchdog is alive).
    static func heartbeatPublisher(
        _ configuration: HangMonitor.Configuration, owner: Owner, world: MonitorWorld, store: ReportStore, latch: ActivityLatch, signal: Int32,
        serviceVersion: ServiceVersion?
    ) -> HeartbeatPublisher? {
        guard configuration.heartbeatInterval != .zero else { return nil }
        do {
            return try HeartbeatPublisher(
                directory: store.directory, access: store.access, interval: configuration.heartbeatInterval,
                thresholdMicroseconds: owner.control.thresholdMicroseconds.load(ordering: .relaxed), loopHistogram: latch.loopHistogram,
                poolDelays: { [id = owner.id, runtime = world.runtime] in
                    runtime.poolWatch.activeOwner() == id ? runtime.poolDelays.snapshot : nil
                }, callsCutShort: { [threads = world.runtime.threads] in threads.callsCutShort.load(ordering: .relaxed) }, dumpSignal: signal, taskLayoutUnrecognised: world.taskLayout.description != nil,
                serviceVersion: serviceVersion)
        } catch {
            owner.logger.warning(
                "no heartbeat file: the host agent cannot tell whether this monitor's watchdog is alive",
                metadata: ["hangwatch.directory": "\(configuration.reportDirectory)", "hangwatch.error": "\(error)"])
            return nil
        }
    }

    /// What the hang lane decides with.
    static func watchdogSettings(_ configuration: HangMonitor.Configuration, world: MonitorWorld) -> Watchdog.Settings {
        Watchdog.Settings(
            busyMask: HangMonitor.Activity.mask(configuration.busyActivities),
            sampleIntervalMicroseconds: DurationText.microseconds(configuration.sampleInterval),
            maxSamples: configuration.maxSamplesPerHang,
            clockResolutionMicroseconds: world.clockResolutionMicroseconds,
            serviceName: configuration.serviceName,
            heartbeatIntervalMicroseconds: DurationText.microseconds(configuration.heartbeatInterval))
    }
}
