import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `CLOCK_MONOTONIC` in microseconds: the watchdog's notion of now. Protocol so tests can drive time.
package protocol MonotonicClock: Sendable {
    func microseconds() -> UInt64
}

struct SystemMonotonicClock: MonotonicClock {
    func microseconds() -> UInt64 {
        nanoseconds() / 1000
    }

    func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Resolution of `CLOCK_MONOTONIC_COARSE`, which stamps loop activities.
    static func coarseResolutionMicroseconds() -> UInt64 {
        var resolution = timespec()
        guard clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) == 0 else { return 10_000 }
        return max(1, UInt64(resolution.tv_sec) * 1_000_000 + UInt64(resolution.tv_nsec) / 1000)
    }

    /// The wall-clock time of monotonic instant `microseconds`.
    func date(ofMicroseconds microseconds: UInt64) -> Date {
        let now = self.microseconds()
        let wallNow = Date()
        return wallNow.addingTimeInterval(-(Double(Int64(now) - Int64(microseconds)) / 1e6))
    }
}
