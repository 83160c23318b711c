import HangWatchReport

extension MonitorAssembly {
    /// Offers this monitor to run the process's pool watch (`Configuration.watchesConcurrencyPool`):
    /// it does at once unless another running monitor already does, else when that one stops.
    /// Its reports are this monitor's (its directory's writer); it probes once per this monitor's
    /// threshold, as a lane of the process's watchdog, the pool as the world has it (`MonitorWorld.Pool`).
    func enrollPoolWatch(_ pool: @escaping @Sendable (MonitorWorld.PoolSetting) -> MonitorWorld.Pool) {
        let settings = PoolWatch.Settings(
            thresholdMicroseconds: { [control = owner.control] in control.thresholdMicroseconds.load(ordering: .relaxed) },
            sampleIntervalMicroseconds: DurationText.microseconds(configuration.sampleInterval),
            serviceName: configuration.serviceName, maxSamples: configuration.maxSamplesPerHang)
        let capture = MonitorWorld.Capture(
            signal: signal, maxFrames: configuration.maxFrames, timeoutNanoseconds: DurationText.nanoseconds(configuration.captureTimeout),
            images: images)
        let setting = MonitorWorld.PoolSetting(capture: capture, alternateStackSize: configuration.alternateSignalStackSize)
        let runtime = world.runtime
        runtime.poolWatch.enroll(owner.id) { [owner, world, reports, images] in
            let parts = pool(setting)
            let watch = PoolWatch(
                settings: settings, wake: runtime.watchdog.wake, enqueue: parts.enqueue, attach: parts.attach,
                attachEveryWorker: parts.attachEveryWorker, threads: parts.threads, looker: parts.looker, sink: reports,
                histogram: runtime.poolDelays, naming: runtime.reportNaming, statistics: owner.statistics, images: images,
                wakeSource: parts.wakeSource, waits: world.waits(capture), tasks: world.dumps?.tasks?.census, logger: owner.logger)
            return PoolWatchSuccession.Active(watch: watch, watchdog: runtime.watchdog)
        }
    }
}
