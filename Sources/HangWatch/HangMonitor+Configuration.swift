import Foundation
import HangWatchReport

extension HangMonitor {
    /// Everything a ``HangMonitor`` can be told. Build it in code, or from a config file and
    /// `HANGWATCH_*` environment variables with ``load(serviceName:configFile:environment:)``; see
    /// docs/configuration.md for every key, its default and its accepted range.
    ///
    /// A value is checked when a monitor is made from it (``validate()``), not when it is set.
    public struct Configuration: Sendable, Equatable {
        /// Names the service in reports and report ids: 1-64 of `A-Z a-z 0-9 . _ -`, not starting
        /// with a dot, without `..`.
        public var serviceName: String
        /// The service's release, written into every report (`serviceVersion`) and published to the
        /// agent (its metrics' `version` label). Nil: `HANGWATCH_SERVICE_VERSION` in the process's
        /// environment, else `service.version` in `OTEL_RESOURCE_ATTRIBUTES`, else `build-` and the
        /// executable's build-id (`ServiceVersion`). At most 64 bytes are kept.
        public var serviceVersion: String? = nil
        /// A loop that stays busy this long is hung. 10 ms ... 1 h. Default 250 ms.
        public var threshold: Duration
        /// Where reports are written (created with mode 0700 if missing).
        public var reportDirectory: String
        /// Set false to make every `start` a no-op (a kill switch for production).
        public var isEnabled: Bool = true
        /// How often a hung thread's stack is sampled while the hang lasts. 1 ms ... 10 s. Default 50 ms.
        public var sampleInterval: Duration = .milliseconds(50)
        /// Samples kept per hang. When reached, every other sample is dropped and the interval
        /// doubles, so a long hang stays covered end to end in a bounded report. 1 ... 10000. Default 100.
        public var maxSamplesPerHang: Int = 100
        /// Frames kept per stack. 1 ... 256. Default 128.
        public var maxFrames: Int = 128
        /// Activities after which the loop counts as busy. Default `beforeSources`, `afterWaiting`.
        /// `beforeWaiting` (the loop is about to sleep) can never be busy.
        public var busyActivities: Set<Activity> = [.beforeSources, .afterWaiting]
        /// Run-loop modes to observe besides the common modes. A mode the loop runs in that is in
        /// neither list is observed from the first time the watchdog finds the loop in it.
        public var additionalModes: [String] = []
        /// The real-time signal used to ask the hung thread for its stack; nil picks `SIGRTMIN+7`.
        public var captureSignal: Int32? = nil
        /// A watched queue (``HangMonitor/startWatchingMainQueue()``,
        /// ``HangMonitor/start(queue:)``): look at the thread that drains it once per
        /// ``sampleInterval``, so that a stall's start is known to half an interval
        /// and it is detected a threshold after it began (`edges: sampled`). Off: the queue is only
        /// pinged once per threshold (`edges: ping`: detected 1 to 2 thresholds late, a lower-bound
        /// duration), and the pinging thread wakes once per threshold instead of once per
        /// interval. Default true (docs/sources.md; its idle cost in docs/performance.md, figure 12).
        public var looksAtQueueThreads = true
        /// SwiftNIO event loops (HangWatchNIO): watch each idle loop's wake through an io_uring
        /// poll of its epoll instance where io_uring is available (Linux 5.1+, not disabled by
        /// `kernel.io_uring_disabled` or a sandbox): a wake is never lost, and an idle loop costs
        /// nothing. Off, or io_uring unavailable: the loop's instance is nested in the watcher's,
        /// a wake can be lost, and a loop is also looked at twice per threshold for its first
        /// minute idle (docs/sources.md). Default true.
        public var usesIoUring = true
        /// Tell a stop by a signal (SIGSTOP, job control) from a cgroup freezer's or a debugger's:
        /// a SIGCONT handler stamps the time the process went on (installed once per process, by
        /// the first monitor that starts with this on, and only where SIGCONT has no handler of the
        /// host's). Its one effect on the host: after a stop by a signal, a sleep it interrupted
        /// (`nanosleep`, `poll`, `select`) returns `EINTR` at the SIGCONT instead of resuming, as
        /// `epoll_wait` does anyway. Off: a stop by a signal is not told apart (docs/report-format.md,
        /// `stoppedBy`). Default true.
        public var stampsContinueSignal = true
        /// How long to wait for the hung thread to answer a capture signal. 1 ms ... 5 s. Default 100 ms.
        public var captureTimeout: Duration = .milliseconds(100)
        /// No hang is reported this soon after a `start`. 0 ... 1 h. Default 0.
        public var startupGracePeriod: Duration = .zero
        /// Retention: the oldest reports are removed beyond this many files. Default 500.
        public var maxReports: Int = 500
        /// Retention: the oldest reports are removed beyond this many bytes. Default 64 MiB.
        public var maxReportBytes: UInt64 = 64 << 20
        /// Rate limit: at most this many new reports per minute, on average. Default 6.
        public var reportsPerMinute: Int = 6
        /// Rate limit: up to this many reports in a burst. Default 10.
        public var reportBurst: Int = 10
        /// A hang whose signature matches a report written less than this long ago is counted in
        /// that report (`repeats`) instead of written again. 0 disables. Default 10 min.
        public var repeatWindow: Duration = .seconds(600)
        /// Bytes of alternate signal stack given to each monitored thread that has none. Default 64 KiB.
        public var alternateSignalStackSize: Int = 64 << 10
        /// The watchdog publishes a heartbeat (`.heartbeat-<pid>` in the report directory, a shared
        /// mapping) at least this often, so the host agent can tell a stuck watchdog from an idle
        /// loop. 0 disables the file. Default 10 s (an idle loop's watchdog wakes once per interval).
        public var heartbeatInterval: Duration = .seconds(10)
        /// Create the report directory 0770 and reports 0640, for a host agent that reaches them
        /// through the report root's default ACL (see `ReportStore.Access`). Default false: 0700/0600.
        public var sharedWithAgent: Bool = false
        /// Keep a histogram of every loop iteration's busy time and publish it in the heartbeat
        /// (the agent exports it as `hangwatch_loop_busy_seconds`), so lag below the threshold is
        /// visible too. Costs two clock reads per iteration. Needs the heartbeat. Default false.
        public var loopHistogram: Bool = false
        /// How much of a run loop's recent past its flight recorder keeps, in buckets of 100 ms:
        /// busy time, iterations, stretches and the longest busy piece per bucket, written by the
        /// loop's thread from the times it reads anyway, so that a hang's report says what led up to
        /// it (`before`, docs/report-format.md), the heartbeat has the loop's busy ratio, and
        /// `hangwatch dump --recent PID` shows the window now. Other sources keep none yet. 0 ... 60
        /// s; 0 turns it off. Default 5 s (50 buckets, 1,368 bytes per run loop with its lag histogram).
        public var leadUpWindow: Duration = .seconds(5)
        /// Also watch Swift's cooperative pool (the global concurrent executor): probe it once per
        /// threshold, keep a histogram of how late it starts a job (``Statistics/concurrencyPool``),
        /// and report a starved pool with every pool thread's stack (`source` `concurrency-pool`).
        /// One pool watch per process, run by the first running monitor that has this on. Default true.
        public var watchesConcurrencyPool: Bool = true

        /// The directory used when none is configured: the host agent's report root.
        public static let defaultReportDirectory = "/var/lib/hangwatch/reports"

        /// A configuration with every other setting at its default; nothing is checked until a
        /// monitor is made from it.
        ///
        /// - Parameters:
        ///   - serviceName: Names the service in reports and report ids (``serviceName``).
        ///   - threshold: How long the watched source may stay busy before it is hung: 10 ms ... 1 h.
        ///   - reportDirectory: Where reports are written (``reportDirectory``).
        public init(
            serviceName: String, threshold: Duration = .milliseconds(250),
            reportDirectory: String = Configuration.defaultReportDirectory
        ) {
            self.serviceName = serviceName
            self.threshold = threshold
            self.reportDirectory = reportDirectory
        }

        /// Checks every setting against its range, as
        /// ``HangMonitor/init(configuration:logger:enricher:)`` and
        /// ``load(serviceName:configFile:environment:)`` do.
        ///
        /// - Throws: ``HangMonitorError/invalidConfiguration(key:value:reason:)`` naming the first
        ///   setting out of range (by its property's name) and what is accepted.
        public func validate() throws {
            func fail(_ key: String, _ value: String, _ reason: String) -> HangMonitorError {
                .invalidConfiguration(key: key, value: value, reason: reason)
            }
            let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
            if serviceName.isEmpty || serviceName.count > 64
                || serviceName.unicodeScalars.contains(where: { !allowed.contains($0) })
                || serviceName.hasPrefix(".") || serviceName.contains("..")
            {
                throw fail(
                    "serviceName", serviceName,
                    "use 1-64 characters from A-Z a-z 0-9 . _ - (not starting with a dot, no \"..\")")
            }
            try Self.check(threshold, "threshold", .milliseconds(10)...(.seconds(3600)))
            if reportDirectory.isEmpty || reportDirectory.utf8.contains(0) {
                throw fail("reportDirectory", reportDirectory, "give a directory path")
            }
            try Self.check(sampleInterval, "sampleInterval", .milliseconds(1)...(.seconds(10)))
            try Self.check(maxSamplesPerHang, "maxSamplesPerHang", 1...10_000)
            try Self.check(maxFrames, "maxFrames", 1...256)
            if busyActivities.isEmpty {
                throw fail("busyActivities", "", "name at least one activity, e.g. beforeSources,afterWaiting")
            }
            if busyActivities.contains(.beforeWaiting) {
                throw fail(
                    "busyActivities", busyActivities.map(\.description).sorted().joined(separator: ","),
                    "beforeWaiting means the loop is about to sleep and cannot be a busy activity")
            }
            for mode in additionalModes where mode.isEmpty || mode.utf8.contains(0) {
                throw fail("additionalModes", mode, "mode names must be non-empty")
            }
            if let signal = captureSignal {
                let range = CaptureSignal.realtimeRange
                if !range.contains(signal) {
                    throw fail(
                        "captureSignal", String(signal),
                        "use a real-time signal, \(range.lowerBound) (SIGRTMIN) ... \(range.upperBound) (SIGRTMAX)")
                }
            }
            try Self.check(captureTimeout, "captureTimeout", .milliseconds(1)...(.seconds(5)))
            try Self.check(startupGracePeriod, "startupGracePeriod", .zero...(.seconds(3600)))
            try Self.check(maxReports, "maxReports", 1...1_000_000)
            if maxReportBytes < 64 << 10 {
                throw fail("maxReportBytes", String(maxReportBytes), "use at least 64 KiB")
            }
            try Self.check(reportsPerMinute, "reportsPerMinute", 1...10_000)
            try Self.check(reportBurst, "reportBurst", 1...10_000)
            try Self.check(repeatWindow, "repeatWindow", .zero...(.seconds(86_400)))
            try Self.check(alternateSignalStackSize, "alternateSignalStackSize", 16 << 10...(16 << 20))
            try Self.check(leadUpWindow, "leadUpWindow", .zero...(.seconds(60)))
            if heartbeatInterval != .zero {
                try Self.check(heartbeatInterval, "heartbeatInterval", .seconds(1)...(.seconds(3600)))
            } else if loopHistogram {
                throw fail("loopHistogram", "true", "the loop histogram is published in the heartbeat; set a heartbeatInterval")
            }
        }

        /// The flight recorder's buckets for `leadUpWindow` (100 ms each, the window rounded up).
        var leadUpBuckets: Int {
            let microseconds = DurationText.microseconds(leadUpWindow)
            return Int((microseconds + 99_999) / 100_000)
        }

        private static func check(_ value: Duration, _ key: String, _ range: ClosedRange<Duration>) throws {
            guard range.contains(value) else {
                throw HangMonitorError.invalidConfiguration(
                    key: key, value: DurationText.format(value),
                    reason: "must be between \(DurationText.format(range.lowerBound)) and \(DurationText.format(range.upperBound))")
            }
        }

        private static func check(_ value: Int, _ key: String, _ range: ClosedRange<Int>) throws {
            guard range.contains(value) else {
                throw HangMonitorError.invalidConfiguration(
                    key: key, value: String(value),
                    reason: "must be between \(range.lowerBound) and \(range.upperBound)")
            }
        }
    }
}
