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
            serviceVersion: world.serviceVersion(configuration.serviceVersion), resource: world.resource)
    }

    /// The report directory this start writes to, held in the process's runtime: the one other
    /// monitors of the process already write to (their settings must be this one's), or opened now
    /// with its writer, its heartbeat file (when one is configured) and its dump answers.
    static func heldDirectory(
        _ configuration: HangMonitor.Configuration, store: ReportStore, owner: Owner, world: MonitorWorld, builder: ReportBuilder,
        images: ImageRegistry, capture: MonitorWorld.Capture
    ) throws -> SharedReportDirectory {
        let runtime = world.runtime
        let settings = SharedReportDirectory.Settings(configuration)
        let heartbeatFile: (() throws(SystemCallError) -> HeartbeatPublisher)? =
            configuration.heartbeatInterval == .zero
            ? nil
            : { () throws(SystemCallError) -> HeartbeatPublisher in
                try HeartbeatPublisher(
                    directory: store.directory, access: store.access, interval: configuration.heartbeatInterval,
                    thresholdMicroseconds: owner.control.thresholdMicroseconds.load(ordering: .relaxed),
                    callsCutShort: { [threads = runtime.threads] in threads.callsCutShort.load(ordering: .relaxed) },
                    dumpSignal: settings.captureSignal, taskLayoutUnrecognised: world.taskLayout.description != nil,
                    serviceVersion: builder.serviceVersion)
            }
        return try runtime.directories.hold(ReportDirectories.key(of: store.directory), settings: settings, in: runtime) {
            SharedReportDirectory(
                settings: settings, store: store, runtime: runtime, clock: world.clock, images: images, heartbeatFile: heartbeatFile,
                dumps: world.dumps, dumpBuilder: builder, capture: capture, logger: owner.logger)
        }
    }

    /// What the hang lane decides with.
    static func watchdogSettings(_ configuration: HangMonitor.Configuration, world: MonitorWorld) -> Watchdog.Settings {
        Watchdog.Settings(
            busyMask: HangMonitor.Activity.mask(configuration.busyActivities),
            sampleIntervalMicroseconds: DurationText.microseconds(configuration.sampleInterval),
            maxSamples: configuration.maxSamplesPerHang,
            clockResolutionMicroseconds: world.clockResolutionMicroseconds,
            serviceName: configuration.serviceName)
    }
}
