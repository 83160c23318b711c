import Foundation
@_spi(Internal) import HangWatchReport

/// What a monitor runs against besides its configuration: the process's runtime (its watchdog and
/// the time and waits it runs on, what the process shares), how a thread's stack is taken and what
/// a blocked one waits on, how the capture signal is installed, the process its reports name.
/// `MonitorAssembly` is made from a configuration and a world: `.system` in a service, a scripted
/// one in tests (their clock, their samples, the watchdog stepped on the test's thread), so both
/// build a monitor the same way.
struct MonitorWorld: Sendable {
    /// What the capture side of a monitor is set to (from its configuration).
    struct Capture: Sendable {
        var signal: Int32
        var maxFrames: Int
        var timeoutNanoseconds: Int64
        var images: ImageRegistry
    }

    /// What is one per process (the watchdog, the report directories, the report ids, the pool
    /// watch, dump serving, the images, the loops reached, the looks at threads): the process's in
    /// a service, a fresh one on the script's time in each scripted world.
    var runtime: ProcessRuntime
    /// The report writer's clock (rate limits, repeat windows), on the environment's time.
    var clock: any MonotonicClock
    /// The resolution of the clock the latches stamp edges with (`CLOCK_MONOTONIC_COARSE`).
    var clockResolutionMicroseconds: UInt64
    /// Installs the capture signal's handler (process-wide; the same signal again changes nothing).
    var installCapture: @Sendable (_ signal: Int32) throws -> Void
    /// Installs the SIGCONT stamp (process-wide, once; `Configuration.stampsContinueSignal`).
    var installContinueStamp: @Sendable () -> Void = {}
    /// Takes a hung thread's stack.
    var sampler: @Sendable (Capture) -> any StackSampling
    /// Tells what a blocked thread waits on and who holds it (nil: not looked at).
    var waits: @Sendable (Capture) -> (any WaitInspecting)?
    /// The process the reports name.
    var host: String
    var pid: Int32
    var process: HangReport.Process
    /// Sees each recording before the writer does (tests keep them); nil: the writer alone.
    var sinkBeforeWriter: (@Sendable (any HangSink) -> any HangSink)?
    /// How `hangwatch dump PID` reaches a monitor, and how the dump is taken (nil: never answered).
    var dumps: Dumps?
    /// The cooperative pool as the pool watch probes and looks at it (nil: the pool is not watched
    /// in this world).
    var pool: (@Sendable (PoolSetting) -> Pool)?
    /// The Swift runtime's task layout, as the monitor found it (`SwiftTaskLayout.current`).
    var taskLayout = SwiftTaskLayout.current
    /// The service's version from the configured one (`ServiceVersion.resolve`: then this
    /// process's environment, then its executable's build-id).
    var serviceVersion: @Sendable (_ configured: String?) -> ServiceVersion? = { ServiceVersion.ofThisProcess(configured: $0) }
    /// Where the process runs, its container and pod (`WorkloadIdentity`; nil: not known).
    var resource: WorkloadIdentity? = nil

    /// What a pool watch is made for: the capture settings and the attach step's stack size.
    struct PoolSetting: Sendable {
        var capture: Capture
        var alternateStackSize: Int
    }

    /// The cooperative pool, as the pool watch sees it: how its probe and attach jobs are
    /// enqueued, how its threads are captured and looked at, and what wakes a dormant watch.
    struct Pool: Sendable {
        var enqueue: @Sendable (PoolProbeSlot) -> Void
        var attach: (@Sendable (CooperativePool) -> Void)?
        var attachEveryWorker: (@Sendable (Int) -> Void)?
        var threads: any PoolThreadCapturing
        var looker: (any PoolThreadLooking & Sendable)?
        var wakeSource: (any PoolWakeSource)?
    }

    /// The requests pending, and the look at every thread a dump is (who answers is the runtime's
    /// `dumps`).
    struct Dumps: Sendable {
        /// Takes the pending requests' nonces.
        var requests: @Sendable () -> [UInt64]
        /// Every thread of the process, looked at.
        var take: @Sendable (Capture) -> ProcessDump
        /// Answered only by a monitor with a heartbeat (the CLI finds a monitor by its heartbeat file).
        var needHeartbeat: Bool
        /// How every Swift task is read (`hangwatch dump --tasks`); nil: task dumps are answered
        /// with the layout's problem.
        var tasks: TaskDumps? = nil
    }

    /// How a task dump reads the process's tasks: HangWatch's probe task first (at the process's
    /// first task dump: it learns where threads keep their task and executor, and is the layout's
    /// self-test), then the census.
    struct TaskDumps: Sendable {
        /// Whether the probe must run before the dump (no verdict on the layout yet).
        var needsProbe: @Sendable () -> Bool
        /// Starts the probe; `parked` is called (on another thread) once it parked.
        var startProbe: @Sendable (_ parked: @escaping @Sendable () -> Void) -> Void
        /// Whether the probe parked.
        var probeParked: @Sendable () -> Bool
        /// Takes the census (judging the probe, then letting it go).
        var take: @Sendable () -> TaskCensus
        /// Takes the census for a hang report (`queuedTasks`): no probe is started or judged (the
        /// pool may be starved), the probe's earlier verdict stands.
        var census: @Sendable () -> TaskCensus

        /// This process's tasks.
        static let system = TaskDumps(
            needsProbe: {
                guard case .success = TaskLayout.recognise(UnsafeTaskRuntime.words()) else { return false }
                if case .notRun? = UnsafeTaskDumpProbe.shared.verdict { return true }
                return UnsafeTaskDumpProbe.shared.verdict == nil
            },
            startProbe: { parked in
                guard case .success(let layout) = TaskLayout.recognise(UnsafeTaskRuntime.words()) else { return parked() }
                UnsafeTaskDumpProbe.shared.start(layout: layout, parked: parked)
            },
            probeParked: { UnsafeTaskDumpProbe.shared.parked != nil },
            take: {
                let probe = UnsafeTaskDumpProbe.shared
                let parked = probe.parked
                let census = UnsafeTaskCensusTaker().take(probe: parked, remembered: probe.verdict)
                if parked != nil {
                    probe.verdict = census.selfTest
                    probe.release()
                }
                return census
            },
            census: { UnsafeTaskCensusTaker().take(probe: nil, remembered: UnsafeTaskDumpProbe.shared.verdict) })
    }

    /// The time, the waits, the scheduler counters and the process facts the watchdog reads (the
    /// runtime's).
    var environment: any WatchdogEnvironment { runtime.environment }

    /// The machine: `CLOCK_MONOTONIC`, `/proc`, the signal handler, libunwind.
    static func system() -> MonitorWorld {
        let runtime = ProcessRuntime.process
        let threads = runtime.threads
        return MonitorWorld(
            runtime: runtime, clock: SystemMonotonicClock(),
            clockResolutionMicroseconds: SystemMonotonicClock.coarseResolutionMicroseconds(),
            installCapture: { try UnsafeCaptureBridge.install(signal: $0) },
            installContinueStamp: { _ = UnsafeContinueSignal.install() },
            sampler: { capture in
                threads.sampler(signal: capture.signal, maxFrames: capture.maxFrames, timeoutNanoseconds: capture.timeoutNanoseconds)
            },
            waits: { capture in
                LinuxWaitInspector(
                    inspection: threads, images: capture.images, maxFrames: capture.maxFrames, timeoutNanoseconds: capture.timeoutNanoseconds,
                    captureSignal: capture.signal)
            },
            host: ProcessSnapshot.hostName(), pid: getpid(),
            process: HangReport.Process(
                executable: ProcessSnapshot.executablePath(), startTimeTicks: ProcessSnapshot.processStartTimeTicks(),
                pidNamespace: NamespacedProcess.ownPIDNamespace),
            dumps: Dumps(
                requests: { UnsafeDumpRequests.takeAll() },
                take: { capture in
                    ProcessDump.take(
                        inspection: threads, maxFrames: capture.maxFrames, timeoutNanoseconds: capture.timeoutNanoseconds, images: capture.images,
                        clock: SystemMonotonicClock())
                }, needHeartbeat: true, tasks: .system),
            pool: { setting in
                let capture = setting.capture
                let timeout = capture.timeoutNanoseconds
                let probe = GlobalExecutorProbe(alternateStackSize: setting.alternateStackSize, signal: capture.signal)
                return Pool(
                    enqueue: { probe.enqueue($0) }, attach: { probe.enqueueAttach(priority: $0.priority) },
                    attachEveryWorker: { probe.enqueueAttachEveryWorker(width: $0) },
                    threads: LinuxPoolThreads(inspection: threads, signal: capture.signal, maxFrames: capture.maxFrames, timeoutNanoseconds: timeout),
                    looker: LinuxPoolThreadLooker(
                        inspection: threads, signal: capture.signal, maxFrames: capture.maxFrames, timeoutNanoseconds: timeout),
                    wakeSource: UnsafeRuntimeEnqueueHooks.shared)
            }, resource: ProcessSnapshot.workload)
    }
}
