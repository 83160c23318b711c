#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// What a running monitor publishes about itself in `.heartbeat-<pid>` in its report directory:
/// 1024 bytes (512 before the lag histogram, 256 before the pool probe's section, 128 before the loop histogram; all are read), little-endian 64-bit fields, updated by the monitor's watchdog thread in place (a
/// seqlock: `sequence` is odd while an update is in progress). Read by the host agent.
///
/// | offset | field |
/// |---|---|
/// | 0 | magic `HWHB0001` |
/// | 8 | sequence |
/// | 16 | pid |
/// | 24 | process start time, clock ticks after boot (`/proc/<pid>/stat` field 22) |
/// | 32 | monitor started, Unix ms |
/// | 40 | last watchdog tick, `CLOCK_MONOTONIC` ns |
/// | 48 | last watchdog tick, Unix ms |
/// | 56 | heartbeat interval, ms (the watchdog ticks at least this often) |
/// | 64 | state: 0 stopped, 1 idle, 2 watching, 3 recording a hang, 4 paused |
/// | 72 | the loop's last activity as the watchdog last saw it: `time << 8 \| activity`, time in 1024 ns units of `CLOCK_MONOTONIC_COARSE` |
/// | 80 | hangs detected |
/// | 88 | threshold, µs |
/// | 96 | loop-busy histogram buckets (15), or 0 when the monitor keeps none |
/// | 104 | loop busy time in all, ns |
/// | 112 | iterations per bucket (`LoopBusyHistogram.bounds`), 15 fields |
/// | 232 | hangs the rate limit kept from being written (0 from monitors that predate it) |
/// | 240 | system calls the process's capture signals cut short (`EINTR`): the whole process's count, in every monitor's page (0 from monitors that predate it) |
/// | 248 | the inode of the process's pid namespace (`/proc/self/ns/pid`; 0: unknown, or a monitor that predates it) |
/// | 256 | pool-probe histogram buckets (15), or 0 when this monitor does not run the process's pool watch |
/// | 264 | pool probes' start delays in all, ns |
/// | 272 | probes per bucket of start delay (`LoopBusyHistogram.bounds`), 15 fields |
/// | 392 | probes that had not started within the threshold (a starved pool) |
/// | 400 | the signal `hangwatch dump` sends to ask the process for a thread dump (0: none, or a monitor that predates it) |
/// | 408 | the watchdog's thread id, as of its last tick (the thread a dump request is sent to) |
/// | 416 | flags: bit 0, the Swift runtime's task layout is not recognised (async labels and computing pool jobs unavailable) |
/// | 424 | the busiest run loop's flight-recorder window ending at the last tick, ns; 0: not published (no monitor of the page keeps a recorder, or one that predates it) |
/// | 432 | busy time in that window, ns |
/// | 440 | the longest busy piece in that window, ns |
/// | 448 | the service's version (`ServiceVersion`), UTF-8, NUL-padded, 64 bytes (all NUL: none, or a monitor that predates it) |
/// | 512 | lag histogram buckets (15), or 0 when no monitor of the page keeps a flight recorder (or the page predates it) |
/// | 520 | the run loops' busy pieces in all, ns |
/// | 528 | busy pieces per bucket of length (`LoopBusyHistogram.bounds`), 15 fields: every piece the run loops' flight recorders counted |
/// | 648 | zero (reserved), to 1024 |
public struct MonitorHeartbeat: Sendable, Equatable {
    public static let size = 1024
    /// The size of a page written before the loop histogram existed.
    public static let minimumSize = 128
    public static let fileNamePrefix = ".heartbeat-"
    package static let magic: UInt64 = 0x3130_3030_4248_5748  // "HWHB0001"

    /// Byte offsets of the fields. The writer's layout is the C header's `struct hw_heartbeat`
    /// (CHangWatchCapture); a test checks that the two agree, field by field.
    package enum Offset: Int, CaseIterable, Sendable {
        case magic = 0, sequence = 8, pid = 16, startTimeTicks = 24, startedUnixMilliseconds = 32
        case tickMonotonicNanoseconds = 40, tickUnixMilliseconds = 48, intervalMilliseconds = 56, state = 64
        case activityWord = 72, hangsDetected = 80, thresholdMicroseconds = 88, loopBuckets = 96
        case loopBusyTotalNanoseconds = 104, loopCounts = 112, hangsSuppressed = 232, callsCutShort = 240, pidNamespace = 248
        case poolBuckets = 256, poolDelayTotalNanoseconds = 264, poolCounts = 272, poolStarvations = 392, captureSignal = 400, watchdogTID = 408, flags = 416
        case leadUpWindowNanoseconds = 424, leadUpBusyNanoseconds = 432, leadUpLongestNanoseconds = 440
        case serviceVersion = 448
        case lagBuckets = 512, lagTotalNanoseconds = 520, lagCounts = 528
    }

    /// Bit 0 of `flags`.
    public static let taskLayoutUnrecognisedFlag: UInt64 = 1

    /// A run loop's busy time over the flight recorder's window ending at the tick
    /// (`HeartbeatLane`: the busiest of the page's run loops that keep a recorder).
    public struct BusyWindow: Sendable, Equatable {
        public var windowNanoseconds: UInt64
        public var busyNanoseconds: UInt64
        /// The longest busy piece (the span the hang threshold is compared with) in the window.
        public var longestNanoseconds: UInt64

        public init(windowNanoseconds: UInt64, busyNanoseconds: UInt64, longestNanoseconds: UInt64) {
            self.windowNanoseconds = windowNanoseconds
            self.busyNanoseconds = busyNanoseconds
            self.longestNanoseconds = longestNanoseconds
        }

        /// Busy time over the window, 0 to 1.
        public var ratio: Double {
            windowNanoseconds > 0 ? min(1, Double(busyNanoseconds) / Double(windowNanoseconds)) : 0
        }
    }

    public enum State: UInt64, Sendable {
        case stopped = 0, idle = 1, watching = 2, recording = 3, paused = 4
    }

    public var pid: Int32
    public var startTimeTicks: UInt64
    public var startedUnixMilliseconds: UInt64
    public var tickMonotonicNanoseconds: UInt64
    public var tickUnixMilliseconds: UInt64
    public var intervalMilliseconds: UInt64
    public var state: State
    public var activityWord: UInt64
    public var hangsDetected: UInt64
    /// Hangs the monitor's rate limit kept from being written, since it started.
    public var hangsSuppressed: UInt64 = 0
    /// System calls the process's capture signals cut short, since it started: the process's
    /// count (the same in the page of every monitor it runs), not this monitor's.
    public var callsCutShort: UInt64 = 0
    /// How late the cooperative pool started the probe's jobs (the loop histogram's buckets), from
    /// the monitor that runs the process's pool watch; nil from the others and older monitors.
    public var poolStartDelay: LoopBusyHistogram.Counts?
    /// Probes that had not started within the threshold (each a starved pool), with `poolStartDelay`.
    public var poolStarvations: UInt64 = 0
    /// The signal `hangwatch dump` queues to ask the process for a thread dump; 0 where the monitor
    /// answers none (or predates dumps).
    public var captureSignal: Int32 = 0
    /// The watchdog's thread, as of its last tick: where a dump request is sent (0: unknown).
    public var watchdogTID: Int32 = 0
    /// The monitor could not read the Swift runtime's task layout: the labels of `async` code and
    /// following pool jobs that compute are unavailable in this process (its log and every report
    /// say so too).
    public var taskLayoutUnrecognised = false
    /// The inode of the process's pid namespace (0: unknown, or a monitor that predates it). In a
    /// container's own pid namespace `pid` is the namespace's (often 1): with this and the start
    /// time, a reader in another namespace finds the process (`NamespacedProcess`).
    public var pidNamespace: UInt64 = 0
    /// The service's version the monitor found (`ServiceVersion.version`); nil when it published
    /// none (or predates versions).
    public var serviceVersion: String?
    public var thresholdMicroseconds: UInt64
    /// The loop-busy histogram, when the monitor keeps one (`HANGWATCH_LOOP_HISTOGRAM`).
    public var loopBusy: LoopBusyHistogram.Counts?
    /// The busiest run loop's busy ratio over its flight recorder's window, when a monitor of the
    /// page keeps a recorder (`leadUpWindow` above 0); nil from the others and older monitors.
    public var loopBusyWindow: BusyWindow?
    /// The run loops' busy pieces by length (the spans the threshold is compared with, read on the
    /// coarse clock), summed over the page's monitors that keep a flight recorder, since they
    /// began; nil from the others and older monitors.
    public var loopLag: LoopBusyHistogram.Counts?

    public init(
        pid: Int32, startTimeTicks: UInt64, startedUnixMilliseconds: UInt64, tickMonotonicNanoseconds: UInt64,
        tickUnixMilliseconds: UInt64, intervalMilliseconds: UInt64, state: State, activityWord: UInt64,
        hangsDetected: UInt64, thresholdMicroseconds: UInt64, loopBusy: LoopBusyHistogram.Counts? = nil, hangsSuppressed: UInt64 = 0,
        poolStartDelay: LoopBusyHistogram.Counts? = nil, poolStarvations: UInt64 = 0, callsCutShort: UInt64 = 0,
        captureSignal: Int32 = 0, watchdogTID: Int32 = 0, taskLayoutUnrecognised: Bool = false, serviceVersion: String? = nil,
        pidNamespace: UInt64 = 0, loopBusyWindow: BusyWindow? = nil, loopLag: LoopBusyHistogram.Counts? = nil
    ) {
        self.loopLag = loopLag
        self.loopBusyWindow = loopBusyWindow
        self.pidNamespace = pidNamespace
        self.serviceVersion = serviceVersion
        self.taskLayoutUnrecognised = taskLayoutUnrecognised
        self.captureSignal = captureSignal
        self.watchdogTID = watchdogTID
        self.loopBusy = loopBusy
        self.callsCutShort = callsCutShort
        self.hangsSuppressed = hangsSuppressed
        self.poolStartDelay = poolStartDelay
        self.poolStarvations = poolStarvations
        self.pid = pid
        self.startTimeTicks = startTimeTicks
        self.startedUnixMilliseconds = startedUnixMilliseconds
        self.tickMonotonicNanoseconds = tickMonotonicNanoseconds
        self.tickUnixMilliseconds = tickUnixMilliseconds
        self.intervalMilliseconds = intervalMilliseconds
        self.state = state
        self.activityWord = activityWord
        self.hangsDetected = hangsDetected
        self.thresholdMicroseconds = thresholdMicroseconds
    }

    /// The loop's last observed activity (a `CFRunLoopActivity` bit) as of the last tick.
    public var lastActivity: UInt8 { UInt8(truncatingIfNeeded: activityWord) }
    /// When it happened, `CLOCK_MONOTONIC_COARSE` ns (0: nothing observed yet).
    public var lastActivityMonotonicNanoseconds: UInt64 { (activityWord >> 8) &* 1024 }

    /// The heartbeat file of process `pid`: `.heartbeat-<pid>`, and in a pid namespace other than
    /// the host's `.heartbeat-<pid>-<namespace inode>` (containers sharing one directory each have
    /// a pid 1: their heartbeats must not be one file).
    /// - Parameters:
    ///   - pid: the process's pid, as its own namespace numbers it.
    ///   - pidNamespace: the inode of its pid namespace; nil or the host's: the plain name.
    public static func fileName(pid: Int32, pidNamespace: UInt64? = nil) -> String {
        guard let pidNamespace, pidNamespace != 0, pidNamespace != NamespacedProcess.initialPIDNamespace else {
            return fileNamePrefix + String(pid)
        }
        return fileNamePrefix + String(pid) + "-" + String(pidNamespace)
    }

    /// The pid in a heartbeat file name (either form), or nil if `name` is not one.
    public static func pid(fromFileName name: String) -> Int32? {
        parse(fileName: name)?.pid
    }

    /// The pid and, in the namespaced form, the pid namespace's inode of a heartbeat file name.
    public static func parse(fileName name: String) -> (pid: Int32, pidNamespace: UInt64?)? {
        guard name.hasPrefix(fileNamePrefix) else { return nil }
        let parts = name.dropFirst(fileNamePrefix.count).split(separator: "-", omittingEmptySubsequences: false)
        guard let pid = parts.first.flatMap({ Int32($0) }), pid > 0, parts.count <= 2 else { return nil }
        guard parts.count == 2 else { return (pid, nil) }
        guard let namespace = UInt64(parts[1]), namespace != 0 else { return nil }
        return (pid, namespace)
    }

    public enum ReadError: Error, Equatable, CustomStringConvertible {
        case unreadable(path: String, reason: String)
        case malformed(path: String, reason: String)
        case busy(path: String)

        public var description: String {
            switch self {
            case .unreadable(let path, let reason): return "\(path): \(reason)"
            case .malformed(let path, let reason): return "\(path): not a heartbeat: \(reason)"
            case .busy(let path): return "\(path): always being updated; no consistent read"
            }
        }
    }

    /// Reads a consistent copy of the heartbeat at `path` (a regular file, never through a symlink).
    public static func read(path: String) throws -> MonitorHeartbeat {
        let fd: Int32
        do {
            fd = try SystemCall.check("open", path: path) { open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        } catch {
            throw ReadError.unreadable(path: path, reason: error.reason)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ReadError.unreadable(path: path, reason: "not a regular file")
        }
        return try read(descriptor: fd, path: path)
    }

    /// Reads a consistent copy of the heartbeat from `descriptor` (a regular file its caller opened
    /// and checked; `path` names it in errors): the writer's seqlock, an odd sequence or one that
    /// changed during the read, is read again.
    public static func read(descriptor fd: Int32, path: String) throws -> MonitorHeartbeat {
        for _ in 0..<1000 {
            var bytes = [UInt8](repeating: 0, count: size)
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, size, 0) }
            guard count >= minimumSize else { throw ReadError.malformed(path: path, reason: "\(max(count, 0)) of \(size) bytes") }
            bytes.removeLast(size - count)
            var again: UInt64 = 0
            guard pread(fd, &again, 8, 8) == 8 else { throw ReadError.malformed(path: path, reason: "short read") }
            let sequence = field(bytes, Offset.sequence.rawValue)
            if sequence & 1 == 1 || UInt64(littleEndian: again) != sequence {
                sched_yield()
                continue
            }
            guard let heartbeat = decode(bytes) else { throw ReadError.malformed(path: path, reason: "bad magic or state") }
            return heartbeat
        }
        throw ReadError.busy(path: path)
    }

    /// The heartbeat in a page's bytes; nil if they are not one.
    public static func decode(_ bytes: [UInt8]) -> MonitorHeartbeat? {
        guard bytes.count >= minimumSize, field(bytes, Offset.magic.rawValue) == magic, let state = State(rawValue: field(bytes, Offset.state.rawValue)),
            let pid = Int32(exactly: field(bytes, Offset.pid.rawValue))
        else { return nil }
        return MonitorHeartbeat(
            pid: pid, startTimeTicks: field(bytes, Offset.startTimeTicks.rawValue), startedUnixMilliseconds: field(bytes, Offset.startedUnixMilliseconds.rawValue),
            tickMonotonicNanoseconds: field(bytes, Offset.tickMonotonicNanoseconds.rawValue), tickUnixMilliseconds: field(bytes, Offset.tickUnixMilliseconds.rawValue),
            intervalMilliseconds: field(bytes, Offset.intervalMilliseconds.rawValue), state: state, activityWord: field(bytes, Offset.activityWord.rawValue),
            hangsDetected: field(bytes, Offset.hangsDetected.rawValue), thresholdMicroseconds: field(bytes, Offset.thresholdMicroseconds.rawValue), loopBusy: loopBusy(bytes),
            hangsSuppressed: bytes.count >= Offset.hangsSuppressed.rawValue + 8 ? field(bytes, Offset.hangsSuppressed.rawValue) : 0,
            poolStartDelay: poolStartDelay(bytes),
            poolStarvations: poolStartDelay(bytes) != nil ? field(bytes, Offset.poolStarvations.rawValue) : 0,
            callsCutShort: bytes.count >= Offset.callsCutShort.rawValue + 8 ? field(bytes, Offset.callsCutShort.rawValue) : 0,
            captureSignal: bytes.count >= Offset.captureSignal.rawValue + 8 ? Int32(truncatingIfNeeded: field(bytes, Offset.captureSignal.rawValue)) : 0,
            watchdogTID: bytes.count >= Offset.watchdogTID.rawValue + 8 ? Int32(truncatingIfNeeded: field(bytes, Offset.watchdogTID.rawValue)) : 0,
            taskLayoutUnrecognised: bytes.count >= Offset.flags.rawValue + 8
                && field(bytes, Offset.flags.rawValue) & taskLayoutUnrecognisedFlag != 0,
            serviceVersion: serviceVersion(bytes),
            pidNamespace: bytes.count >= Offset.pidNamespace.rawValue + 8 ? field(bytes, Offset.pidNamespace.rawValue) : 0,
            loopBusyWindow: loopBusyWindow(bytes), loopLag: histogram(bytes, buckets: .lagBuckets, total: .lagTotalNanoseconds, counts: .lagCounts))
    }

    /// The lead-up section; nil when the window is 0 (not published: the words were reserved and
    /// zero before it) or the page is too short to hold it.
    static func loopBusyWindow(_ bytes: [UInt8]) -> BusyWindow? {
        guard bytes.count >= Offset.leadUpLongestNanoseconds.rawValue + 8 else { return nil }
        let window = field(bytes, Offset.leadUpWindowNanoseconds.rawValue)
        guard window > 0 else { return nil }
        return BusyWindow(
            windowNanoseconds: window, busyNanoseconds: field(bytes, Offset.leadUpBusyNanoseconds.rawValue),
            longestNanoseconds: field(bytes, Offset.leadUpLongestNanoseconds.rawValue))
    }

    /// The version field's text, up to its first NUL; nil when empty, absent or not UTF-8.
    static func serviceVersion(_ bytes: [UInt8]) -> String? {
        let start = Offset.serviceVersion.rawValue
        guard bytes.count >= start + ServiceVersion.maxBytes else { return nil }
        let field = bytes[start..<(start + ServiceVersion.maxBytes)].prefix { $0 != 0 }
        guard !field.isEmpty, let text = String(validating: field, as: UTF8.self) else { return nil }
        return text
    }

    static func poolStartDelay(_ bytes: [UInt8]) -> LoopBusyHistogram.Counts? {
        // The starvations after the counts are part of the section.
        guard bytes.count >= Offset.poolStarvations.rawValue + 8 else { return nil }
        return histogram(bytes, buckets: .poolBuckets, total: .poolDelayTotalNanoseconds, counts: .poolCounts)
    }

    static func loopBusy(_ bytes: [UInt8]) -> LoopBusyHistogram.Counts? {
        histogram(bytes, buckets: .loopBuckets, total: .loopBusyTotalNanoseconds, counts: .loopCounts)
    }

    /// A histogram section: nil when its bucket count is not `LoopBusyHistogram.bucketCount` (0:
    /// not published) or the page is too short to hold it.
    static func histogram(_ bytes: [UInt8], buckets: Offset, total: Offset, counts: Offset) -> LoopBusyHistogram.Counts? {
        let count = LoopBusyHistogram.bucketCount
        guard bytes.count >= counts.rawValue + 8 * count, field(bytes, buckets.rawValue) == UInt64(count) else { return nil }
        return LoopBusyHistogram.Counts(
            buckets: (0..<count).map { field(bytes, counts.rawValue + 8 * $0) }, totalNanoseconds: field(bytes, total.rawValue))
    }

    /// The page for these values (sequence 2): what a monitor's file holds.
    public func encoded() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        var values: [(Int, UInt64)] = [
            (Offset.magic.rawValue, Self.magic), (Offset.sequence.rawValue, 2), (Offset.pid.rawValue, UInt64(pid)),
            (Offset.startTimeTicks.rawValue, startTimeTicks), (Offset.startedUnixMilliseconds.rawValue, startedUnixMilliseconds),
            (Offset.tickMonotonicNanoseconds.rawValue, tickMonotonicNanoseconds), (Offset.tickUnixMilliseconds.rawValue, tickUnixMilliseconds),
            (Offset.intervalMilliseconds.rawValue, intervalMilliseconds), (Offset.state.rawValue, state.rawValue),
            (Offset.activityWord.rawValue, activityWord), (Offset.hangsDetected.rawValue, hangsDetected),
            (Offset.thresholdMicroseconds.rawValue, thresholdMicroseconds), (Offset.hangsSuppressed.rawValue, hangsSuppressed),
            (Offset.callsCutShort.rawValue, callsCutShort), (Offset.captureSignal.rawValue, UInt64(max(0, captureSignal))),
            (Offset.watchdogTID.rawValue, UInt64(max(0, watchdogTID))),
            (Offset.flags.rawValue, taskLayoutUnrecognised ? Self.taskLayoutUnrecognisedFlag : 0), (Offset.pidNamespace.rawValue, pidNamespace),
        ]
        if let loopBusy {
            values += [(Offset.loopBuckets.rawValue, UInt64(loopBusy.buckets.count)), (Offset.loopBusyTotalNanoseconds.rawValue, loopBusy.totalNanoseconds)]
            values += loopBusy.buckets.enumerated().map { (Offset.loopCounts.rawValue + 8 * $0.offset, $0.element) }
        }
        if let loopLag {
            values += [(Offset.lagBuckets.rawValue, UInt64(loopLag.buckets.count)), (Offset.lagTotalNanoseconds.rawValue, loopLag.totalNanoseconds)]
            values += loopLag.buckets.enumerated().map { (Offset.lagCounts.rawValue + 8 * $0.offset, $0.element) }
        }
        if let loopBusyWindow, loopBusyWindow.windowNanoseconds > 0 {
            values += [
                (Offset.leadUpWindowNanoseconds.rawValue, loopBusyWindow.windowNanoseconds),
                (Offset.leadUpBusyNanoseconds.rawValue, loopBusyWindow.busyNanoseconds),
                (Offset.leadUpLongestNanoseconds.rawValue, loopBusyWindow.longestNanoseconds),
            ]
        }
        if let poolStartDelay {
            values += [
                (Offset.poolBuckets.rawValue, UInt64(poolStartDelay.buckets.count)),
                (Offset.poolDelayTotalNanoseconds.rawValue, poolStartDelay.totalNanoseconds), (Offset.poolStarvations.rawValue, poolStarvations),
            ]
            values += poolStartDelay.buckets.enumerated().map { (Offset.poolCounts.rawValue + 8 * $0.offset, $0.element) }
        }
        for (offset, value) in values {
            for byte in 0..<8 { bytes[offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
        }
        for (index, byte) in (serviceVersion ?? "").utf8.prefix(ServiceVersion.maxBytes).enumerated() {
            bytes[Offset.serviceVersion.rawValue + index] = byte
        }
        return bytes
    }

    static func field(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }
}

/// Names of run-loop activities (`CFRunLoopActivity` bits), as reports and heartbeats use them.
public enum RunLoopActivityName {
    public static func of(_ raw: UInt8) -> String {
        switch raw {
        case 1: return "entry"
        case 2: return "beforeTimers"
        case 4: return "beforeSources"
        case 32: return "beforeWaiting"
        case 64: return "afterWaiting"
        case 128: return "exit"
        default: return "none"
        }
    }
}
