import CHangWatchCapture

/// The fine clock the C side stamps with (the signal handler's entry and exit, the loop
/// histogram's stretches), for Swift stamps that compare with them.
enum UnsafeClock {
    /// `CLOCK_MONOTONIC` in nanoseconds, through the vDSO (no system call).
    @inline(__always)
    static func monotonicNanoseconds() -> UInt64 {
        hw_monotonic_ns()
    }
}
