import HangWatchReport

extension MonitorAssembly {
    /// Offers this monitor to run the process's pool watch (`Configuration.watchesConcurrencyPool`):
    /// it does at once unless another running monitor already does, else when that one stops.
    /// Its reports go through this monitor's writer; it probes once per this monitor's threshold,
    /// as a lane of this monitor's watchdog.
    func enrollPoolWatch() {
        let settings = PoolWatch.Settings(
            thresholdMicroseconds: { [control = owner.control] in control.thresholdMicroseconds.load(ordering: .relaxed) },
            sampleIntervalMicroseconds: DurationText.microseconds(configuration.sampleInterval),
            serviceName: configuration.serviceName, maxSamples: configuration.maxSamplesPerHang)
        let probe = GlobalExecutorProbe(alternateStackSize: configuration.alternateSignalStackSize, signal: signal)
        let timeout = DurationText.nanoseconds(configuration.captureTimeout)
        let runtime = world.runtime
        let threads = LinuxPoolThreads(
            inspection: runtime.threads, signal: signal, maxFrames: configuration.maxFrames, timeoutNanoseconds: timeout)
        let capture = MonitorWorld.Capture(signal: signal, maxFrames: configuration.maxFrames, timeoutNanoseconds: timeout, images: images)
        runtime.poolWatch.enroll(owner.id) { [owner, world, configuration, signal, watchdog, writer, images] in
            let watch = PoolWatch(
                settings: settings, wake: watchdog.wake, enqueue: { probe.enqueue($0) },
                attach: { probe.enqueueAttach(priority: $0.priority) }, attachEveryWorker: { probe.enqueueAttachEveryWorker(width: $0) },
                threads: threads,
                looker: LinuxPoolThreadLooker(
                    inspection: runtime.threads, signal: signal, maxFrames: configuration.maxFrames, timeoutNanoseconds: timeout),
                sink: writer, histogram: runtime.poolDelays, naming: runtime.reportNaming, statistics: owner.statistics, images: images, wakeSource: UnsafeRuntimeEnqueueHooks.shared,
                waits: world.waits(capture), logger: owner.logger)
            return PoolWatchSeat.Active(watch: watch, watchdog: watchdog)
        }
    }
}
