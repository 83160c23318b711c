import Foundation
import HangWatchReport

/// What a monitor runs against besides its configuration: the time and the waits, how a thread's
/// stack is taken and what a blocked one waits on, how the capture signal is installed, the
/// process its reports name, and who steps the watchdog. `MonitorAssembly` is made from a
/// configuration and a world: `.system` in a service, a scripted one in tests (their clock, their
/// samples, the watchdog stepped on the test's thread), so both build a monitor the same way.
struct MonitorWorld: Sendable {
    /// What the capture side of a monitor is set to (from its configuration).
    struct Capture: Sendable {
        var signal: Int32
        var maxFrames: Int
        var timeoutNanoseconds: Int64
        var images: ImageRegistry
    }

    /// The time, the waits, the scheduler counters and the process facts the watchdog reads.
    var environment: any WatchdogEnvironment
    /// The report writer's clock (rate limits, repeat windows), on the environment's time.
    var clock: any MonotonicClock
    /// The resolution of the clock the latches stamp edges with (`CLOCK_MONOTONIC_COARSE`).
    var clockResolutionMicroseconds: UInt64
    /// Installs the capture signal's handler (process-wide; the same signal again changes nothing).
    var installCapture: @Sendable (_ signal: Int32) throws -> Void
    /// Takes a hung thread's stack.
    var sampler: @Sendable (Capture) -> any StackSampling
    /// Tells what a blocked thread waits on and who holds it (nil: not looked at).
    var waits: @Sendable (Capture) -> (any WaitInspecting)?
    /// The process the reports name.
    var host: String
    var pid: Int32
    var process: HangReport.Process
    /// True: the watchdog runs on a thread of its own, started when the first lane joins it. False:
    /// the caller steps it (`Watchdog.run()` on its own thread, on scripted time).
    var startsThreads = true
    /// Sees each recording before the writer does (tests keep them); nil: the writer alone.
    var sinkBeforeWriter: (@Sendable (any HangSink) -> any HangSink)?
    /// How `hangwatch dump PID` reaches a monitor, and how the dump is taken (nil: never answered).
    var dumps: Dumps?
    /// What is one per process (the report ids, the pool watch, dump serving, the loops reached,
    /// the looks at threads): the process's in a service, a fresh one in each scripted world.
    var runtime = ProcessRuntime()
    /// The Swift runtime's task layout, as the monitor found it (`SwiftTaskLayout.current`).
    var taskLayout = SwiftTaskLayout.current
    /// The service's version from the configured one (`ServiceVersion.resolve`: then this
    /// process's environment, then its executable's build-id).
    var serviceVersion: @Sendable (_ configured: String?) -> ServiceVersion? = { ServiceVersion.ofThisProcess(configured: $0) }

    /// The requests pending, and the look at every thread a dump is (who answers is the runtime's
    /// `dumps`).
    struct Dumps: Sendable {
        /// Takes the pending requests' nonces.
        var requests: @Sendable () -> [UInt64]
        /// Every thread of the process, looked at.
        var take: @Sendable (Capture) -> ProcessDump
        /// Answered only by a monitor with a heartbeat (the CLI finds a monitor by its heartbeat file).
        var needHeartbeat: Bool
    }

    /// The machine: `CLOCK_MONOTONIC`, `/proc`, the signal handler, libunwind.
    static func system() -> MonitorWorld {
        let environment = SystemWatchdogEnvironment()
        let runtime = ProcessRuntime.process
        let threads = runtime.threads
        return MonitorWorld(
            environment: environment, clock: SystemMonotonicClock(),
            clockResolutionMicroseconds: SystemMonotonicClock.coarseResolutionMicroseconds(),
            installCapture: { try UnsafeCaptureBridge.install(signal: $0) },
            sampler: { capture in
                threads.sampler(signal: capture.signal, maxFrames: capture.maxFrames, timeoutNanoseconds: capture.timeoutNanoseconds)
            },
            waits: { capture in
                LinuxWaitInspector(
                    inspection: threads, images: capture.images, maxFrames: capture.maxFrames, timeoutNanoseconds: capture.timeoutNanoseconds,
                    captureSignal: capture.signal)
            },
            host: ProcessSnapshot.hostName(), pid: getpid(),
            process: HangReport.Process(executable: ProcessSnapshot.executablePath(), startTimeTicks: ProcessSnapshot.processStartTimeTicks()),
            dumps: Dumps(
                requests: { UnsafeCaptureBridge.DumpRequests.takeAll() },
                take: { capture in
                    ProcessDump.take(
                        inspection: threads, maxFrames: capture.maxFrames, timeoutNanoseconds: capture.timeoutNanoseconds, images: capture.images,
                        clock: SystemMonotonicClock())
                }, needHeartbeat: true), runtime: runtime)
    }
}
