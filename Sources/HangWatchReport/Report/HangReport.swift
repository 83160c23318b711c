#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// One hang of a monitored loop: when it started, how long it lasted, the stacks sampled while it
/// lasted, and the context that explains it. Written as one JSON file by the monitor; read by the
/// `hangwatch` CLI and the `hangwatchd` agent. The format is documented in docs/report-format.md.
///
/// Top-level field names are a public contract: new fields may be added, none renamed.
/// Addresses are hexadecimal strings; durations are milliseconds; times are RFC 3339 UTC with
/// milliseconds (`2026-11-22T01:02:03.123Z`).
public struct HangReport: Codable, Sendable, Equatable {
    /// The schema family and major version this library reads: every `hangwatch.hang/1` and
    /// `hangwatch.hang/1.x`.
    public static let majorSchema = "hangwatch.hang/1"
    /// The schema this library writes (1.1 added `stacks[].truncation` and `stacks[].framePointer`;
    /// 1.2 the async callers (`frames[].async`, `stacks[].asyncCallers`) and `threads`, for
    /// reports that hold several threads; 1.3 `edges`; 1.4 `samples[].cutCallShort` and
    /// `capture.callsCutShort`; 1.5 `waitsFor`, `threads[].waitsFor` and `offCPUMs`, the verdict
    /// `deadlocked`, thread dumps (`source` `dump`), `nameSignature`, `labels` and `labelsOmitted`;
    /// 1.6 `resource`, the container and pod; the verdicts `throttled` and `paging` and the
    /// context's CPU limit, throttled, stopped and paging fields; 1.7 `before`, the lead-up, and
    /// `kind`; 1.8 the lead-up's near misses, `before.nearMisses` and `before.nearMissesIn`).
    public static let currentSchema = "hangwatch.hang/1.8"

    public var schema: String
    /// Unique and sortable: `<UTC start>-<service>-<pid>-<sequence>`.
    public var id: String
    public var service: String
    public var host: String
    public var pid: Int32
    public var process: Process
    /// The hung thread; in a report that holds several threads (`threads`, e.g. a starved
    /// `concurrency-pool`), the first of them.
    public var thread: ThreadInfo
    /// Every thread the report holds, each with its own stack and verdict (schema 1.2): set for a
    /// `concurrency-pool` report (every thread of the starved pool); absent otherwise, and in
    /// older reports.
    public var threads: [ThreadSnapshot]?
    /// What kind of loop was watched: `runloop` (others come with other activity sources).
    public var source: String
    /// How the start and end were found (schema 1.3): `exact` (run-loop observers, scopes, an event
    /// loop's own wake and a ping's answer), `ping` (an overdue ping: the start is a lower bound),
    /// `sampled` (looks a sample interval apart: each edge within half an interval). Absent in
    /// older reports.
    public var edges: String?
    public var startedAt: Date
    public var detectedAt: Date
    /// Nil while the hang is still going on (a provisional report).
    public var endedAt: Date?
    /// From the start of the busy period (not from detection) to the loop's next activity, or to
    /// the last sample while the hang is ongoing.
    public var durationMs: Double
    public var thresholdMs: Double
    public var outcome: Outcome
    /// The run-loop activity the loop was stuck after (`beforeSources`, `afterWaiting`, ...).
    public var activity: String
    /// The run-loop mode at detection, when known.
    public var mode: String?
    public var samples: [Sample]
    /// Distinct stacks; samples refer to them by index.
    public var stacks: [Stack]
    public var heaviestStack: HeaviestStack?
    /// Distinct frames; stacks refer to them by index.
    public var frames: [Frame]
    public var images: [Image]
    /// Hash of the frames that identify the culprit; equal signatures group the same hang.
    public var signature: String
    public var context: Context
    public var capture: CaptureSummary
    /// Later hangs with the same signature that were counted here instead of written as copies.
    public var repeats: Repeats?
    /// Set when names were written into the report after the fact (by `hangwatchd` or
    /// `hangwatch symbolicate`): when, by what, and what could not be named.
    public var symbolication: Symbolication?
    /// Set by the agent when it finished a provisional report whose process had gone.
    public var processExit: ProcessExit?
    /// What the blocked thread waited for and who held it, with the holder's stack, the wait chain
    /// and a deadlock's cycle (schema 1.5); absent when the thread did not wait on anything the
    /// monitor can name (it computed, slept, or read a socket), and in older reports.
    public var waitsFor: WaitsFor?
    /// Schema 1.5: the signature by function names (`StackSignature.computeByNames`), stable
    /// across builds, hosts and releases of the same code; written with the names (symbolication
    /// sets it: `refreshNameSignature()`). Absent when a frame the rule counts has no name, and in
    /// older reports. Groups use `grouping`, which works it out from the names a report has.
    public var nameSignature: String?
    /// Schema 1.5: the labels in effect on the hung thread and its task when the hang was seen
    /// (`HangMonitor.withLabels`), bounded (`HangLabels`); absent when none were.
    public var labels: [String: String]?
    /// Schema 1.5: how many labels in effect were left out of `labels` (more than
    /// `HangLabels.maxCount`); absent when none were.
    public var labelsOmitted: Int?
    /// Which HangWatch wrote the report (`MonitorVersion.current` of the monitor's build): its
    /// version and commit. Optional and additive within schema 1.5 (readers ignore it); absent in
    /// reports of monitors built before it, and in dumps.
    public var monitor: MonitorVersion?
    /// Which release of the service wrote the report, and where the monitor found its version
    /// (`ServiceVersion`: the configuration, `HANGWATCH_SERVICE_VERSION`, `OTEL_RESOURCE_ATTRIBUTES`,
    /// or the executable's build-id). Optional and additive within schema 1.5; absent in reports of
    /// monitors built before it, and in dumps.
    public var serviceVersion: ServiceVersion?
    /// Schema 1.6: where the process runs, its container and Kubernetes pod, by OpenTelemetry's
    /// semantic-convention names (`WorkloadIdentity`: `container.id`, `k8s.pod.name`, ...), read
    /// once when the monitor started; absent when none is known, and in older reports.
    public var resource: WorkloadIdentity?
    /// A task dump's tasks (`source` `tasks`, `hangwatch dump --tasks`): every live Swift task of
    /// the process, folded, with its tree, actors and findings. Optional and additive within schema
    /// 1.6; absent in every other report.
    public var tasks: TaskDump?
    /// The tasks waiting to run when the hang was detected (`concurrency-pool`: for a pool thread;
    /// `dispatch-main`: on the main actor), counted and folded. Optional and additive within
    /// schema 1.6; absent in every other report, and where the monitor reads no tasks.
    public var queuedTasks: QueuedTasks?
    /// Schema 1.7: what the loop did in the seconds before the hang began, from its flight recorder
    /// (`LeadUp`); absent for sources that keep none (all but `runloop`), for a hang seen only
    /// after it ended, with the recorder off, and in older reports.
    public var before: LeadUp?
    /// Schema 1.7: one job, a backlog, both, or unknown, as far as the source proves it (`Kind`);
    /// absent where `before` is.
    public var kind: Kind?
    /// A recent-window dump's windows (`source` `recent`, `hangwatch dump --recent`): every watch
    /// of the process with its flight recorder's window ending now, or why it keeps none. Optional
    /// since schema 1.8; absent in every other report.
    public var recent: Recent?

    public init(
        schema: String = HangReport.currentSchema, id: String, service: String, host: String, pid: Int32,
        process: Process, thread: ThreadInfo, source: String = "runloop", startedAt: Date, detectedAt: Date,
        endedAt: Date?, durationMs: Double, thresholdMs: Double, outcome: Outcome, activity: String,
        mode: String?, samples: [Sample], stacks: [Stack], heaviestStack: HeaviestStack?, frames: [Frame],
        images: [Image], signature: String, context: Context, capture: CaptureSummary, repeats: Repeats? = nil
    ) {
        self.schema = schema
        self.id = id
        self.service = service
        self.host = host
        self.pid = pid
        self.process = process
        self.thread = thread
        self.source = source
        self.startedAt = startedAt
        self.detectedAt = detectedAt
        self.endedAt = endedAt
        self.durationMs = durationMs
        self.thresholdMs = thresholdMs
        self.outcome = outcome
        self.activity = activity
        self.mode = mode
        self.samples = samples
        self.stacks = stacks
        self.heaviestStack = heaviestStack
        self.frames = frames
        self.images = images
        self.signature = signature
        self.context = context
        self.capture = capture
        self.repeats = repeats
    }
}

extension HangReport {
    /// How the hang ended.
    public enum Outcome: String, Codable, Sendable, Equatable {
        /// Still going on when this (provisional) report was written.
        case ongoing
        /// The loop moved again.
        case recovered
        /// The process died while the loop was hung (set by the agent on a provisional report).
        case processExited = "process exited during hang"
        /// The monitor was stopped while the hang was going on.
        case monitorStopped = "monitor stopped during hang"
    }

    /// The process that hung.
    public struct Process: Codable, Sendable, Equatable {
        public var executable: String
        /// Start time in clock ticks since boot (`/proc/<pid>/stat` field 22): with `pid`, tells a
        /// live process from a later one that reuses its pid.
        public var startTimeTicks: UInt64
        /// The inode of its pid namespace (`/proc/self/ns/pid`): in a container's own namespace,
        /// `pid` is the namespace's (often 1), and this, with the start time, names the process to
        /// a reader outside. Nil from monitors that predate it.
        public var pidNamespace: UInt64?
        /// The pid the host knows the process by, where it differs from `pid` (a container's own pid
        /// namespace): filled in by the agent when it indexes the report, from `NSpid`
        /// (`NamespacedProcess`); nil where they are the same or the host could not tell.
        public var hostPid: Int32?
        public init(executable: String, startTimeTicks: UInt64, pidNamespace: UInt64? = nil, hostPid: Int32? = nil) {
            self.executable = executable
            self.startTimeTicks = startTimeTicks
            self.pidNamespace = pidNamespace
            self.hostPid = hostPid
        }
    }

    /// The thread whose loop hung.
    public struct ThreadInfo: Codable, Sendable, Equatable {
        public var tid: Int32
        public var name: String?
        public var isMain: Bool
        public init(tid: Int32, name: String?, isMain: Bool) {
            self.tid = tid
            self.name = name
            self.isMain = isMain
        }
    }
}

extension HangReport {
    /// Names written into a report after it was written (`symbolication`).
    public struct Symbolication: Codable, Sendable, Equatable {
        public var at: Date
        /// `hangwatchd` or `hangwatch symbolicate`.
        public var by: String
        public var framesNamed: Int
        public var framesUnnamed: Int
        /// Images that could not be used, one line each (not found, build-id mismatch, ...).
        public var problems: [String]

        public init(at: Date, by: String, framesNamed: Int, framesUnnamed: Int, problems: [String]) {
            self.at = at
            self.by = by
            self.framesNamed = framesNamed
            self.framesUnnamed = framesUnnamed
            self.problems = problems
        }
    }

    /// How the agent found out that the process of a provisional report had gone (`processExit`).
    public struct ProcessExit: Codable, Sendable, Equatable {
        /// When the agent noticed.
        public var noticedAt: Date
        /// `gone` (no such process) or `pid reused` (another process has the pid now).
        public var reason: String
        /// The last time the hang was seen going on (its last sample); the hang lasted at least
        /// until then, and `endedAt`/`durationMs` say so.
        public var lastSeenAt: Date

        public init(noticedAt: Date, reason: String, lastSeenAt: Date) {
            self.noticedAt = noticedAt
            self.reason = reason
            self.lastSeenAt = lastSeenAt
        }
    }
}
