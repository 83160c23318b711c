/// What the watchdog sleeps on: posted by a loop's latch on an idle-to-busy edge, by control calls
/// (stop, a new threshold, resume) and by a dump request (`hangwatch dump`), which arrives as a
/// signal: a POSIX semaphore, the one wake-up a signal handler may post (`sem_post` is
/// async-signal-safe), where a `DispatchSemaphore` is not.
///
/// Its memory is its own and freed with it; whoever registered it for dump requests unregisters it
/// first (`DumpService.withdraw`, when the last directory that answers dumps closes).
package final class WatchdogWake: @unchecked Sendable {
    let semaphore: UnsafeMutableRawPointer

    package init() {
        semaphore = .allocate(byteCount: UnsafeWake.size, alignment: 16)
        guard UnsafeWake.initialize(semaphore) else { preconditionFailure("sem_init failed") }
    }

    deinit {
        UnsafeWake.destroy(semaphore)
        semaphore.deallocate()
    }

    package func signal() {
        UnsafeWake.post(semaphore)
    }

    /// Waits until posted.
    package func wait() {
        UnsafeWake.wait(semaphore)
    }

    /// Waits until posted (true) or `CLOCK_MONOTONIC` reaches `nanoseconds` (false).
    package func wait(untilNanoseconds nanoseconds: UInt64) -> Bool {
        UnsafeWake.wait(semaphore, untilNanoseconds: nanoseconds)
    }

    /// Takes a post if there is one, without waiting.
    package func tryWait() -> Bool {
        UnsafeWake.tryWait(semaphore)
    }
}
