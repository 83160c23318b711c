/// A cgroup's CPU bandwidth limit and its throttling counters, v1 and v2: the parsers, and the rule
/// for which limit of a nested path holds. Pure: the monitor reads the files (once per hang for the
/// limit, with `pread` for the counters) and hands the text here.
///
/// - v1: `cpu.cfs_quota_us` (µs per period, `-1`: no limit) and `cpu.cfs_period_us`; `cpu.stat`
///   `nr_periods`, `nr_throttled`, `throttled_time` (**nanoseconds**).
/// - v2 (cgroup-v2.rst): `cpu.max` is `$MAX $PERIOD` (`max 100000`: no limit; `20000 100000`: 0.2
///   CPU); `cpu.stat` adds `nr_periods`, `nr_throttled`, `throttled_usec` (**microseconds**) to the
///   usage lines once the cpu controller is enabled.
/// - `cpu.stat.local` (kernel 6.6 on, both versions): the time this cgroup's own run queues were
///   throttled, whether by its own quota or an ancestor's (`throttled_time` ns in v1,
///   `throttled_usec` in v2); `cpu.stat` counts throttling only at the level whose quota ran out.
/// - The throttled time sums over CPUs (each CPU's throttled run queue counts), so it can exceed
///   the wall time of a multi-threaded cgroup: a reader compares it with one thread's off-CPU time
///   only after capping it there.
@_spi(Internal) public enum CgroupCPU {
    /// The CPU a cgroup may use: `cores` = quota / period.
    public struct Limit: Sendable, Equatable {
        public var quotaMicroseconds: UInt64
        public var periodMicroseconds: UInt64
        public var cores: Double { Double(quotaMicroseconds) / Double(periodMicroseconds) }

        public init(quotaMicroseconds: UInt64, periodMicroseconds: UInt64) {
            self.quotaMicroseconds = quotaMicroseconds
            self.periodMicroseconds = periodMicroseconds
        }
    }

    /// v1: the quota file's text and the period file's. Nil: no limit (`-1`), or not numbers.
    public static func parseV1(quota: some StringProtocol, period: some StringProtocol) -> Limit? {
        let fields = (quota.split(whereSeparator: \.isWhitespace), period.split(whereSeparator: \.isWhitespace))
        guard fields.0.count == 1, fields.1.count == 1, let quota = Int64(fields.0[0]), quota > 0,
            let period = UInt64(fields.1[0]), period > 0
        else { return nil }
        return Limit(quotaMicroseconds: UInt64(quota), periodMicroseconds: period)
    }

    /// v2: `cpu.max`. Nil: `max` (no limit), or not such a line.
    public static func parseV2(max text: some StringProtocol) -> Limit? {
        let fields = text.split(whereSeparator: \.isWhitespace)
        guard fields.count == 2, let quota = UInt64(fields[0]), quota > 0, let period = UInt64(fields[1]), period > 0 else { return nil }
        return Limit(quotaMicroseconds: quota, periodMicroseconds: period)
    }

    /// The limit that holds on a path: the smallest `cores` among its levels' (nested limits are
    /// not multiplied: each level caps its whole subtree), and its index in `levels` (innermost
    /// first). Nil when no level has one. A tie goes to the innermost level.
    public static func tightest(_ levels: [Limit?]) -> (limit: Limit, level: Int)? {
        var best: (limit: Limit, level: Int)?
        for (index, limit) in levels.enumerated() {
            guard let limit else { continue }
            if best.map({ limit.cores < $0.limit.cores }) ?? true { best = (limit, index) }
        }
        return best
    }

    /// A `cpu.stat` or `cpu.stat.local` file's throttling counters. Fields a file lacks are nil
    /// (`cpu.stat.local` has only the time; a v2 `cpu.stat` without the cpu controller has none).
    public struct Throttling: Sendable, Equatable {
        public var periods: UInt64?
        public var throttledPeriods: UInt64?
        public var throttledNanoseconds: UInt64?

        public init(periods: UInt64? = nil, throttledPeriods: UInt64? = nil, throttledNanoseconds: UInt64? = nil) {
            self.periods = periods
            self.throttledPeriods = throttledPeriods
            self.throttledNanoseconds = throttledNanoseconds
        }
    }

    /// Parses `cpu.stat` / `cpu.stat.local` of either version from its bytes (the watchdog's
    /// `pread` buffer; no strings built). Nil when the file names no throttling counter at all.
    package static func parseThrottling(bytes: ArraySlice<UInt8>) -> Throttling? {
        var fields = ByteFields(bytes)
        var throttling = Throttling()
        while let key = fields.next() {
            guard let value = fields.next() else { break }
            if key.elementsEqual("nr_periods".utf8) {
                throttling.periods = ByteFields.decimal(value)
            } else if key.elementsEqual("nr_throttled".utf8) {
                throttling.throttledPeriods = ByteFields.decimal(value)
            } else if key.elementsEqual("throttled_time".utf8) {
                throttling.throttledNanoseconds = ByteFields.decimal(value)
            } else if key.elementsEqual("throttled_usec".utf8) {
                throttling.throttledNanoseconds = ByteFields.decimal(value).map { $0 &* 1000 }
            }
        }
        guard throttling != Throttling() else { return nil }
        return throttling
    }

    public static func parseThrottling(_ text: some StringProtocol) -> Throttling? {
        parseThrottling(bytes: Array(text.utf8)[...])
    }
}
