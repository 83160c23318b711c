import CHangWatchCapture
@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// The loop-busy histogram the loop's thread keeps (each bucket written by that thread alone) and
/// the watchdog copies into the heartbeat page at each tick. Its layout is the C header's.
struct UnsafeLoopHistogram: @unchecked Sendable {
    fileprivate let storage: UnsafeMutablePointer<hw_loop_histogram>

    static func allocate() -> UnsafeLoopHistogram {
        let storage = UnsafeMutablePointer<hw_loop_histogram>.allocate(capacity: 1)
        storage.initialize(to: hw_loop_histogram())
        return UnsafeLoopHistogram(storage: storage)
    }

    func deallocate() {
        storage.deallocate()
    }

    /// Sets every count to zero (the caller's own histogram: no loop writes it).
    func reset() {
        storage.pointee = hw_loop_histogram()
    }

    /// Adds `other`'s counts to this one (the caller's own), as the watchdog reads them.
    func accumulate(_ other: UnsafeLoopHistogram) {
        hw_loop_histogram_accumulate(storage, other.storage)
    }

    /// The counts as they are now (relaxed loads, as the heartbeat's copy reads them).
    func read() -> LoopBusyHistogram.Counts {
        var copy = hw_loop_histogram()
        hw_loop_histogram_accumulate(&copy, storage)
        let buckets = withUnsafeBytes(of: copy.counts) { Array($0.bindMemory(to: UInt64.self)) }
        return LoopBusyHistogram.Counts(buckets: buckets, totalNanoseconds: copy.total_ns)
    }

    /// One iteration that was busy for `nanoseconds`. The loop's thread only.
    @inline(__always)
    func add(busyNanoseconds nanoseconds: UInt64) {
        hw_loop_histogram_add(storage, nanoseconds)
    }

    /// Bytes of memory one holds.
    static var bytes: Int { MemoryLayout<hw_loop_histogram>.stride }

    /// Upper bounds of the buckets but the last, in nanoseconds (the C header's table).
    static var bucketBounds: [UInt64] {
        withUnsafeBytes(of: hw_loop_bounds_ns) { Array($0.bindMemory(to: UInt64.self)) }
    }
}

/// The monitor's heartbeat page, in a shared file mapping the caller made of `size` bytes. One
/// writer (the watchdog) updates it with plain stores between two sequence increments; the layout
/// is the C header's, which `MonitorHeartbeat` in HangWatchReport reads (a test checks both agree).
final class UnsafeHeartbeatPage: @unchecked Sendable {
    static let size = Int(HW_HEARTBEAT_SIZE)
    private let page: UnsafeMutablePointer<hw_heartbeat>

    /// Takes over `mapping` (unmapped when this page goes) and writes its header.
    init(
        mapping: UnsafeMutableRawPointer, pid: UInt64, startTimeTicks: UInt64, intervalMilliseconds: UInt64,
        thresholdMicroseconds: UInt64, histogram: UnsafeLoopHistogram?
    ) {
        page = mapping.bindMemory(to: hw_heartbeat.self, capacity: 1)
        hw_heartbeat_init(page, pid, startTimeTicks, intervalMilliseconds, thresholdMicroseconds, histogram.map { UnsafePointer($0.storage) })
    }

    deinit {
        munmap(page, Self.size)
    }

    func tick(
        state: UInt64, activityWord: UInt64, hangsDetected: UInt64, hangsSuppressed: UInt64, callsCutShort: UInt64,
        thresholdMicroseconds: UInt64, histogram: UnsafeLoopHistogram?
    ) {
        hw_heartbeat_tick(
            page, state, activityWord, hangsDetected, hangsSuppressed, callsCutShort, thresholdMicroseconds,
            histogram.map { UnsafePointer($0.storage) })
    }

    /// Publishes a run loop's busy time and longest piece over `windowNanoseconds` ending now (nil:
    /// no monitor of the page keeps a flight recorder).
    func leadUp(windowNanoseconds: UInt64, busyNanoseconds: UInt64, longestNanoseconds: UInt64) {
        hw_heartbeat_lead_up(page, windowNanoseconds, busyNanoseconds, longestNanoseconds)
    }

    /// Publishes the run loops' lag histogram, their flight recorders' busy pieces by length (nil:
    /// no monitor of the page keeps a recorder).
    func lag(_ histogram: UnsafeLoopHistogram?) {
        hw_heartbeat_lag(page, histogram.map { UnsafePointer($0.storage) })
    }

    /// Publishes the signal a thread dump is asked for with (`hangwatch dump`; 0: none).
    func captureSignal(_ signal: Int32) {
        hw_heartbeat_capture_signal(page, UInt64(max(0, signal)))
    }

    /// Publishes that the Swift runtime's task layout is not recognised (`SwiftTaskLayout`).
    func taskLayoutUnrecognised(_ unrecognised: Bool) {
        hw_heartbeat_flags(page, unrecognised ? UInt64(HW_HEARTBEAT_FLAG_TASK_LAYOUT_UNRECOGNISED) : 0)
    }

    /// Publishes the inode of the process's pid namespace (0: unknown).
    func pidNamespace(_ inode: UInt64) {
        hw_heartbeat_pid_namespace(page, inode)
    }

    /// Publishes the service's version (`ServiceVersion`; empty: none).
    func serviceVersion(_ version: String) {
        let bytes = Array(version.utf8.prefix(64))
        bytes.withUnsafeBufferPointer { hw_heartbeat_service_version(page, $0.baseAddress, $0.count) }
    }

    /// Publishes the pool probe's start delays (nil: this monitor does not run the pool watch).
    func pool(counts: [UInt64]?, totalNanoseconds: UInt64, starvations: UInt64) {
        guard let counts, counts.count == Int(HW_LOOP_BUCKETS) else {
            hw_heartbeat_pool(page, nil, 0)
            return
        }
        var histogram = hw_loop_histogram()
        histogram.total_ns = totalNanoseconds
        withUnsafeMutableBytes(of: &histogram.counts) { raw in
            for (index, count) in counts.enumerated() { raw.storeBytes(of: count, toByteOffset: index * 8, as: UInt64.self) }
        }
        hw_heartbeat_pool(page, &histogram, starvations)
    }

    /// Byte offsets of the page's fields, by the names `MonitorHeartbeat` uses.
    static var layout: [String: Int] {
        [
            "magic": MemoryLayout<hw_heartbeat>.offset(of: \.magic)!,
            "sequence": MemoryLayout<hw_heartbeat>.offset(of: \.sequence)!,
            "pid": MemoryLayout<hw_heartbeat>.offset(of: \.pid)!,
            "startTimeTicks": MemoryLayout<hw_heartbeat>.offset(of: \.start_time_ticks)!,
            "startedUnixMilliseconds": MemoryLayout<hw_heartbeat>.offset(of: \.started_unix_ms)!,
            "tickMonotonicNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.tick_monotonic_ns)!,
            "tickUnixMilliseconds": MemoryLayout<hw_heartbeat>.offset(of: \.tick_unix_ms)!,
            "intervalMilliseconds": MemoryLayout<hw_heartbeat>.offset(of: \.interval_ms)!,
            "state": MemoryLayout<hw_heartbeat>.offset(of: \.state)!,
            "activityWord": MemoryLayout<hw_heartbeat>.offset(of: \.activity_word)!,
            "hangsDetected": MemoryLayout<hw_heartbeat>.offset(of: \.hangs_detected)!,
            "thresholdMicroseconds": MemoryLayout<hw_heartbeat>.offset(of: \.threshold_us)!,
            "loopBuckets": MemoryLayout<hw_heartbeat>.offset(of: \.loop_buckets)!,
            "loopBusyTotalNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.loop_busy_total_ns)!,
            "loopCounts": MemoryLayout<hw_heartbeat>.offset(of: \.loop_counts)!,
            "hangsSuppressed": MemoryLayout<hw_heartbeat>.offset(of: \.hangs_suppressed)!,
            "captureSignal": MemoryLayout<hw_heartbeat>.offset(of: \.capture_signal)!,
            "watchdogTID": MemoryLayout<hw_heartbeat>.offset(of: \.watchdog_tid)!,
            "flags": MemoryLayout<hw_heartbeat>.offset(of: \.flags)!,
            "callsCutShort": MemoryLayout<hw_heartbeat>.offset(of: \.calls_cut_short)!,
            "pidNamespace": MemoryLayout<hw_heartbeat>.offset(of: \.pid_namespace)!,
            "poolBuckets": MemoryLayout<hw_heartbeat>.offset(of: \.pool_buckets)!,
            "poolDelayTotalNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.pool_delay_total_ns)!,
            "poolCounts": MemoryLayout<hw_heartbeat>.offset(of: \.pool_counts)!,
            "poolStarvations": MemoryLayout<hw_heartbeat>.offset(of: \.pool_starvations)!,
            "leadUpWindowNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.lead_up_window_ns)!,
            "leadUpBusyNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.lead_up_busy_ns)!,
            "leadUpLongestNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.lead_up_longest_ns)!,
            "serviceVersion": MemoryLayout<hw_heartbeat>.offset(of: \.service_version)!,
            "lagBuckets": MemoryLayout<hw_heartbeat>.offset(of: \.lag_buckets)!,
            "lagTotalNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.lag_total_ns)!,
            "lagCounts": MemoryLayout<hw_heartbeat>.offset(of: \.lag_counts)!,
        ]
    }

    /// The page's magic number, as the C header defines it.
    static var magic: UInt64 { HW_HEARTBEAT_MAGIC }
}
