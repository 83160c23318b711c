import Foundation

/// One of the kernel's clocks now, in nanoseconds, read here (not through SwiftNIO):
/// `CLOCK_MONOTONIC` is the monitor's (and the loops' iteration ends'), `CLOCK_MONOTONIC_COARSE`
/// the one the event-loop watcher's grid of looks is laid on.
func clockNanoseconds(_ clock: clockid_t = CLOCK_MONOTONIC) -> UInt64 {
    var now = timespec()
    clock_gettime(clock, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
