import Logging
import Synchronization

/// What is truly one per process, whatever the number of monitors, owned in one place: the
/// watchdog (the one `hangwatch-wdog` thread every monitor's lanes join), the event-loop watcher
/// (`hangwatch-loop`), the report directories in use (each one's writer and heartbeat), the report
/// ids' sequence, the pool watch and its delays, dump serving, the loaded images, the run loops
/// reached, and how a thread is looked at. A monitor reaches it through its world
/// (`MonitorWorld.runtime`): the system world's is `process`; a scripted world makes its own, on
/// the script's time, so tests share nothing.
///
/// What each monitor controls itself (its source, latch, hang lane, threshold, stop) is in the
/// handle `start` makes (`MonitorAssembly`); docs/architecture.md says what each part follows.
final class ProcessRuntime: Sendable {
    /// This process's.
    static let process = ProcessRuntime(
        environment: SystemWatchdogEnvironment(), startsThreads: true,
        registerDumpWake: { wake, leaving in
            if let wake {
                UnsafeDumpRequests.register(wake.semaphore)
            } else if let leaving {
                UnsafeDumpRequests.unregister(leaving.semaphore)
            }
        }, unblockDumpSignal: { UnsafeCaptureBridge.unblockOnCurrentThread(signal: $0) })

    /// The time, the waits and the scheduler counters every lane of `watchdog` reads.
    let environment: any WatchdogEnvironment
    /// The process's one watchdog: every timed duty of every monitor is a lane of it. On a thread
    /// of its own in a service; stepped by the test (`Watchdog.run()`, on scripted time) in a
    /// scripted world.
    let watchdog: Watchdog
    /// The report directories monitors write to: each one's writer and heartbeat.
    let directories: ReportDirectories
    /// Numbers the reports of every monitor, so ids (and file names) never collide.
    let reportNaming = ReportNaming()
    /// The one pool watch, run by one monitor at a time.
    let poolWatch = PoolWatchSuccession()
    /// The pool's probe delays, rests and starvations (the heartbeat and `HangMonitor.statistics`).
    let poolDelays = PoolProbeHistogram()
    /// Who answers `hangwatch dump PID`: the process's one dump lane.
    let dumps: DumpService
    /// The CFRunLoops behind RunLoops reached from another thread.
    let runLoops = ReachedRunLoops()
    /// The one way a thread of this process is looked at.
    let threads = ThreadInspection()
    private let loopWatchers = Mutex<[Bool: EventLoopWatcher]>([:])
    private let imageRegistry = Mutex<ImageRegistry?>(nil)

    /// `startsThreads`: whether the watchdog runs on a thread of its own (false: scripted time, the
    /// test runs it). `registerDumpWake`: makes the dump lane's wake the one the capture signal's
    /// handler posts for a dump request (nil: none, `leaving`'s); `unblockDumpSignal`: lets a
    /// request's signal through on the watchdog's thread. A scripted runtime's do nothing.
    init(
        environment: any WatchdogEnvironment, startsThreads: Bool,
        registerDumpWake: @escaping @Sendable (_ wake: WatchdogWake?, _ leaving: WatchdogWake?) -> Void = { _, _ in },
        unblockDumpSignal: @escaping @Sendable (_ signal: Int32) -> Void = { _ in }
    ) {
        self.environment = environment
        watchdog = Watchdog(environment: environment, startsThread: startsThreads)
        directories = ReportDirectories()
        dumps = DumpService(
            watchdog: watchdog, register: registerDumpWake, unblock: unblockDumpSignal,
            poolWatchOwner: { [poolWatch] in poolWatch.activeOwner() })
    }

    /// The thread that waits for idle event loops to wake: one per way of polling (through an
    /// io_uring or nested epoll instances, `Configuration.usesIoUring`), made when a first loop needs it.
    func loopWatcher(usesIoUring: Bool) -> EventLoopWatcher {
        loopWatchers.withLock { watchers in
            if let watcher = watchers[usesIoUring] { return watcher }
            let watcher = EventLoopWatcher(usesIoUring: usesIoUring)
            watchers[usesIoUring] = watcher
            return watcher
        }
    }

    /// The images loaded in the process, as the unwinder's table holds them (read when a first
    /// monitor starts).
    func images(logger: Logger) -> ImageRegistry {
        imageRegistry.withLock { registry in
            if let registry { return registry }
            let made = ImageRegistry(logger: logger)
            registry = made
            return made
        }
    }
}
