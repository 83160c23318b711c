import CHangWatchCapture

/// The watchdog's wake-up: a POSIX semaphore a signal handler may post (`WatchdogWake`).
enum UnsafeWake {
    static var size: Int { hw_wake_size() }
    static func initialize(_ semaphore: UnsafeMutableRawPointer) -> Bool { hw_wake_init(semaphore) == 0 }
    static func destroy(_ semaphore: UnsafeMutableRawPointer) { hw_wake_destroy(semaphore) }
    static func post(_ semaphore: UnsafeMutableRawPointer) { hw_wake_post(semaphore) }
    static func wait(_ semaphore: UnsafeMutableRawPointer) { _ = hw_wake_wait(semaphore) }
    /// True when posted, false when `monotonicNanoseconds` (`CLOCK_MONOTONIC`) passed first.
    static func wait(_ semaphore: UnsafeMutableRawPointer, untilNanoseconds monotonicNanoseconds: UInt64) -> Bool {
        hw_wake_wait_until(semaphore, monotonicNanoseconds) == 1
    }
    static func tryWait(_ semaphore: UnsafeMutableRawPointer) -> Bool { hw_wake_try(semaphore) != 0 }
}
