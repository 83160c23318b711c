import HangWatchReport

/// One place what the agent learns about the host's hangs goes: the Prometheus endpoint, an OTLP
/// collector's metrics, the OTLP hang log records. The agent reads the spool; an exporter never
/// does, it is told.
///
/// Contract:
/// - Calls come from the agent's worker, one pass at a time, in the order things happened;
///   `reportsDropped` may also come from another thread (the log outbox counting records it gave
///   up). Implementations are thread-safe and never wait on the network: they queue.
/// - `hangFinished(_:)` is called once per hang (or per batch of repeats a monitor folded into
///   its report since the agent last looked: `count` of them); hangs already in the spool when
///   the agent started are not reported. An exporter that `waitsForNames` gets the hang once the
///   agent has named the report's frames, or has given up doing so (the report was deleted, or
///   naming failed); the others get it at once.
/// - `publish(_:)` follows every pass, with levels and running totals (never increments).
/// - `shutdown()` is called once, after every other call; it returns when the exporter has let
///   go of what it holds (an endpoint's port, say).
protocol HangExporter: Sendable {
    /// Whether hangs should reach this exporter only once their frames have names.
    var waitsForNames: Bool { get }
    func hangFinished(_ hang: FinishedHang)
    /// A report of `release` (a spool directory and the version the report names) newly says a
    /// thread is deadlocked: once per report, as soon as its first (provisional) version says so.
    func deadlockFound(_ release: ServiceRelease)
    /// `count` reports were lost for `reason`.
    func reportsDropped(_ reason: DropReason, count: Int)
    func publish(_ gauges: SpoolGauges)
    func shutdown() async
}

/// Why reports were lost (the `reason` label of `hangwatch_reports_dropped_total`).
enum DropReason: String, Sendable, CaseIterable {
    /// A hang's OTLP log record was not delivered (queue full, or retries used up).
    case export
    /// Retention deleted a report (age, count, size or free-space limits).
    case retention
    /// A report could not be read (corrupt, foreign, too large).
    case unreadable
    /// A monitor's rate limit kept a hang from being written (counted from its heartbeat).
    case rateLimit = "rate_limit"
}

/// What a monitor's heartbeat says about it (the `state` label of `hangwatch_monitors`).
enum MonitorState: String, Sendable, CaseIterable {
    case alive
    case watchdogStuck = "watchdog_stuck"
    case processStopped = "process_stopped"
}

/// The spool after a pass.
struct SpoolGauges: Sendable, Equatable {
    var reports = 0
    var bytes: UInt64 = 0
    /// Monitors by state (states with none may be missing).
    var monitors: [MonitorState: Int] = [:]
    /// The service directories (names; "" is not one).
    var services: [String] = []
    /// Loop iterations the monitors of each service directory counted since the agent started.
    var loopBusy: [String: LoopBusyHistogram.Counts] = [:]
    /// The busy pieces the run loops' flight recorders of each service directory counted since the
    /// agent started (`MonitorHeartbeat.loopLag`).
    var loopLag: [String: LoopBusyHistogram.Counts] = [:]
    /// The pool probes' start delays of each service directory since the agent started.
    var poolStartDelay: [String: LoopBusyHistogram.Counts] = [:]
    /// Probes that found the pool starved, by service directory, since the agent started.
    var poolStarvations: [String: UInt64] = [:]
    /// System calls the monitors' captures cut short, by service directory, since the agent started.
    var callsCutShort: [String: UInt64] = [:]
    /// Seconds live monitors watched, by service directory and version, since the agent started.
    var monitoredSeconds: [ServiceRelease: Double] = [:]
    /// The busiest run loop's busy ratio over its flight recorder's window, by service directory,
    /// from the healthy monitors that publish one (`MonitorHeartbeat.loopBusyWindow`), as of this pass.
    var loopBusyRatio: [String: Double] = [:]
}

/// A service directory and one version of the service in it: what the metrics' `service` and
/// `version` labels name.
struct ServiceRelease: Hashable, Sendable, Comparable {
    var service: String
    /// `ServiceVersion.version`, or `MonitoredTime.unversioned`.
    var version: String

    static func < (a: ServiceRelease, b: ServiceRelease) -> Bool { (a.service, a.version) < (b.service, b.version) }
}

extension HangExporter {
    func deadlockFound(_ release: ServiceRelease) {}
}
