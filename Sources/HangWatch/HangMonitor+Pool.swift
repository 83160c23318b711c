import HangWatchReport

extension HangMonitor {
    /// Offers this monitor to run the process's pool watch (`Configuration.watchesConcurrencyPool`):
    /// it does at once unless another running monitor already does, else when that one stops.
    /// Its reports go through this monitor's writer; it probes once per this monitor's threshold,
    /// as a lane of `watchdog`.
    func enrollPoolWatch(watchdog: Watchdog, writer: ReportWriter, images: ImageRegistry, signal: Int32) {
        let settings = PoolWatch.Settings(
            thresholdMicroseconds: { [control] in control.thresholdMicroseconds.load(ordering: .relaxed) },
            sampleIntervalMicroseconds: DurationText.microseconds(configuration.sampleInterval),
            serviceName: configuration.serviceName, maxSamples: configuration.maxSamplesPerHang)
        let probe = GlobalExecutorProbe(alternateStackSize: configuration.alternateSignalStackSize, signal: signal)
        let threads = LinuxPoolThreads(
            signal: signal, maxFrames: configuration.maxFrames,
            timeoutNanoseconds: DurationText.nanoseconds(configuration.captureTimeout))
        let timeout = DurationText.nanoseconds(configuration.captureTimeout)
        PoolWatchRegistry.enroll(ObjectIdentifier(self)) { [logger, statisticsStore, configuration] in
            let watch = PoolWatch(
                settings: settings, wake: watchdog.wake, enqueue: { probe.enqueue($0) },
                attach: { probe.enqueueAttach(priority: $0.priority) }, attachEveryWorker: { probe.enqueueAttachEveryWorker(width: $0) }, threads: threads,
                looker: LinuxPoolThreadLooker(signal: signal, maxFrames: configuration.maxFrames, timeoutNanoseconds: timeout),
                sink: writer, statistics: statisticsStore, images: images, wakeSource: UnsafeRuntimeEnqueueHooks.shared,
                waits: LinuxWaitInspector(images: images, maxFrames: configuration.maxFrames, timeoutNanoseconds: timeout),
                logger: logger)
            return PoolWatchRegistry.Active(watch: watch, watchdog: watchdog)
        }
    }
}
