#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension HangReport {
    /// What the rest of the system was doing, so a hang caused by a stopped or starved process is
    /// not blamed on the code.
    public struct Context: Codable, Sendable, Equatable {
        /// One-word explanation: see `Verdict`.
        public var verdict: Verdict
        /// Thread CPU time / wall time over the sampled part of the hang (computing near 1, blocked near 0).
        public var onCpuRatio: Double?
        /// Time runnable-but-not-running / wall time: near 1 means the CPU was given to others.
        public var runQueueRatio: Double?
        /// The system call most blocked samples were in.
        public var blockedIn: String?
        /// Samples per scheduler state letter.
        public var threadStates: [String: Int]
        public var rssBytes: UInt64?
        public var loadAverage: [Double]?
        public var cpuCount: Int
        /// The most the watchdog woke up later than it asked to, in ms; large values mean this
        /// process was stopped (SIGSTOP, a debugger) or starved of CPU.
        public var watchdogOversleepMs: Double
        /// A tracer (debugger) was attached at detection (`TracerPid` in /proc/self/status).
        public var debuggerAttached: Bool
        /// The hang coincided with this process being stopped.
        public var processStopped: Bool
        /// Schema 1.6: the host's online CPUs; `cpuCount` is then what this process may use at
        /// once (a CPU limit rounded up, or its CPU affinity, when fewer).
        public var hostCpuCount: Int?
        /// Schema 1.6: the CPU limit on the hung thread's cgroup path (the tightest level), absent
        /// when none is visible.
        public var cpuLimit: CPULimit?
        /// Schema 1.6: how long the limit held the thread back during the hang: the cgroup's
        /// throttled time, at most the thread's own off-CPU time (the counter sums over CPUs).
        public var throttledMs: Double?
        /// Schema 1.6: the cgroup's own throttled-time counter over the same span, before that cap.
        public var cgroupThrottledMs: Double?
        /// Schema 1.6: periods in which the cgroup was throttled during the hang.
        public var throttledPeriods: Int?
        /// Schema 1.6: how long the process was stopped (frozen, stopped by a signal, held by a
        /// debugger) during the hang; `durationMs - stoppedMs` was busy.
        public var stoppedMs: Double?
        /// Schema 1.6: what stopped it: `cgroup freezer`, `SIGSTOP` or `ptrace`; absent when the
        /// evidence names nothing.
        public var stoppedBy: String?
        /// Schema 1.6: the evidence for `stoppedBy` and `stoppedMs`, in words: a proof (a counter
        /// that moved, a state read, a signal received) or an inference, said as one.
        public var stopEvidence: String?
        /// Schema 1.6: `durationMs - stoppedMs`, when the process was stopped.
        public var busyMs: Double?
        /// Schema 1.6: the hung thread's major page faults (pages it waited to be read in) during
        /// the hang; absent when none.
        public var majorFaults: Int?
        /// Schema 1.6: time some task was stalled on memory during the hang (pressure stall
        /// information), from `memoryPressureSource`.
        public var memoryStallMs: Double?
        /// Schema 1.6: `cgroup v2 <path>` (the thread's own cgroup's `memory.pressure`) or
        /// `system` (`/proc/pressure/memory`).
        public var memoryPressureSource: String?
        /// Schema 1.6: where the counters behind `throttledMs`, `stoppedMs`, `majorFaults` and
        /// `memoryStallMs` begin, ms after `startedAt`: the watchdog's first look at the busy
        /// stretch (within a few ms of its start when the watchdog was resting; at most the
        /// threshold, at detection, when it was waiting out an earlier stretch).
        public var countersFromMs: Double?

        public init(
            verdict: Verdict, onCpuRatio: Double?, runQueueRatio: Double?, blockedIn: String?,
            threadStates: [String: Int], rssBytes: UInt64?, loadAverage: [Double]?, cpuCount: Int,
            watchdogOversleepMs: Double, debuggerAttached: Bool, processStopped: Bool
        ) {
            self.verdict = verdict
            self.onCpuRatio = onCpuRatio
            self.runQueueRatio = runQueueRatio
            self.blockedIn = blockedIn
            self.threadStates = threadStates
            self.rssBytes = rssBytes
            self.loadAverage = loadAverage
            self.cpuCount = cpuCount
            self.watchdogOversleepMs = watchdogOversleepMs
            self.debuggerAttached = debuggerAttached
            self.processStopped = processStopped
        }
    }

    /// A cgroup's CPU limit (schema 1.6): `cores` CPUs' worth of time per period.
    public struct CPULimit: Codable, Sendable, Equatable {
        public var cores: Double
        /// The file it was read from: `cgroup v1 cpu.cfs_quota_us`, `cgroup v2 cpu.max`.
        public var source: String
        /// The cgroup directory whose limit it is (the tightest level on the thread's path).
        public var path: String

        public init(cores: Double, source: String, path: String) {
            self.cores = cores
            self.source = source
            self.path = path
        }
    }

    /// The one-word explanation of a hang.
    public enum Verdict: String, Codable, Sendable, Equatable, CaseIterable {
        /// The thread was on a CPU most of the time: the code was computing.
        case computing
        /// The thread was off-CPU, waiting (a lock, I/O, a sleep): see `blockedIn`.
        case blocked
        /// The thread wanted a CPU and did not get one: the machine was overloaded.
        case starved
        /// The thread wanted a CPU and its cgroup's CPU limit kept it off one (schema 1.6):
        /// `cpuLimit`, `throttledMs`.
        case throttled
        /// The thread spent the hang waiting for pages to be read in (schema 1.6): `majorFaults`,
        /// `memoryStallMs`.
        case paging
        /// The process was stopped (SIGSTOP, job control) during the hang.
        case stopped
        /// A debugger was attached: a breakpoint is not a hang.
        case debugger
        /// Not enough information (no samples).
        case unknown
        /// The thread waited in a cycle: it waited for an object held by a thread that waited, link
        /// by link, for an object the first one held (schema 1.5; `waitsFor.deadlock`). It never ends
        /// by itself.
        case deadlocked

        /// A verdict this version does not know reads as `unknown` rather than failing the report.
        public init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            self = Verdict(rawValue: text) ?? .unknown
        }
    }

    /// How the capture went.
    public struct CaptureSummary: Codable, Sendable, Equatable {
        /// The signal used to ask the thread for its stack.
        public var signal: Int32
        public var sampleIntervalMs: Double
        public var samplesTaken: Int
        /// Samples dropped to keep the report bounded (every other one, when the cap was reached).
        public var samplesDropped: Int
        public var maxFrames: Int
        /// Median and maximum pause of the hung thread per signal capture, in microseconds.
        public var pauseMedianUs: Double?
        public var pauseMaxUs: Double?
        /// Problems, counted by kind (e.g. `timeout`, `signal blocked`, `thread exited`).
        public var errors: [CaptureError]
        /// Hangs not written since the previous report because of the rate limit.
        public var reportsSuppressed: Int
        /// Schema 1.4: how many captures cut a system call short (`samples[].cutCallShort`); absent
        /// when none did.
        public var callsCutShort: Int?
        /// What this monitor could not read in this process, and why (e.g. a Swift runtime whose
        /// task layout it does not recognise: async labels unavailable); absent when nothing.
        public var unavailable: [String]?

        public init(
            signal: Int32, sampleIntervalMs: Double, samplesTaken: Int, samplesDropped: Int, maxFrames: Int,
            pauseMedianUs: Double?, pauseMaxUs: Double?, errors: [CaptureError], reportsSuppressed: Int,
            callsCutShort: Int? = nil
        ) {
            self.callsCutShort = callsCutShort
            self.signal = signal
            self.sampleIntervalMs = sampleIntervalMs
            self.samplesTaken = samplesTaken
            self.samplesDropped = samplesDropped
            self.maxFrames = maxFrames
            self.pauseMedianUs = pauseMedianUs
            self.pauseMaxUs = pauseMaxUs
            self.errors = errors
            self.reportsSuppressed = reportsSuppressed
        }
    }

    /// A kind of capture problem and how often it happened.
    public struct CaptureError: Codable, Sendable, Equatable {
        public var kind: String
        public var count: Int
        public var message: String
        public init(kind: String, count: Int, message: String) {
            self.kind = kind
            self.count = count
            self.message = message
        }
    }

    /// Repeats of the same signature folded into this report.
    public struct Repeats: Codable, Sendable, Equatable {
        public var count: Int
        public var lastAt: Date
        public var totalDurationMs: Double
        public var maxDurationMs: Double
        public init(count: Int, lastAt: Date, totalDurationMs: Double, maxDurationMs: Double) {
            self.count = count
            self.lastAt = lastAt
            self.totalDurationMs = totalDurationMs
            self.maxDurationMs = maxDurationMs
        }
    }
}
