import Logging

/// systemd's watchdog: `WATCHDOG=1` every `interval` (half of `$WATCHDOG_USEC`), sent by the time
/// keeper, but only while the worker is idle or its current pass is younger than
/// `maxPassDuration`: a stuck agent stops pinging, and systemd restarts it.
///
/// Confined to the time keeper, like `PassScheduler`.
final class WatchdogPinger: @unchecked Sendable {
    /// A pass running longer than this stops the pings.
    static let maxPassDuration: UInt64 = 120_000_000_000

    let interval: Duration
    private let clock: any AgentClock
    private let notifier: any SystemdNotifying
    private let progress: PassProgress
    private let logger: Logger
    private var timer: (any AgentTimer)?

    init(interval: Duration, clock: any AgentClock, notifier: any SystemdNotifying, progress: PassProgress, logger: Logger) {
        self.interval = interval
        self.clock = clock
        self.notifier = notifier
        self.progress = progress
        self.logger = logger
    }

    /// Pings now and then every `interval` (again from now when it was running).
    func start() {
        timer?.cancel()
        timer = clock.every(interval) { [weak self] in self?.ping() }
        ping()
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    private func ping() {
        if let running = progress.runningFor(now: clock.monotonicNanoseconds), running > Self.maxPassDuration {
            logger.error(
                "a pass has been running for over 2 minutes; no longer telling systemd all is well",
                metadata: ["hangwatch.pass_seconds": "\(running / 1_000_000_000)"])
            return
        }
        notifier.notify("WATCHDOG=1")
    }
}
