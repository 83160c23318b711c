import CEpoll
import Foundation
@testable import HangWatch
@_spi(Internal) import HangWatchReport
import Testing

/// The io_uring the event-loop watcher polls idle loops through, against the real kernel: a poll
/// completes with its key when its file becomes readable, waits in the ring until drained, and a
/// cancelled one completes as cancelled.
@Suite struct LoopWakeRingTests {
    /// Everything the ring completed, drained at once.
    func drained(_ ring: UnsafeLoopWakeRing) -> [(key: UInt64, result: Int32)] {
        var completions: [(key: UInt64, result: Int32)] = []
        ring.drain { completions.append(($0, $1)) }
        return completions
    }

    func signal(_ event: Int32) {
        var one: UInt64 = 1
        #expect(write(event, &one, 8) == 8)
    }

    /// Zero entries are invalid (EINVAL); where the kernel refuses io_uring altogether (seccomp,
    /// `kernel.io_uring_disabled`), the refusal is that one (EPERM, ENOSYS): either way the error
    /// names the call and carries the kernel's reason.
    @Test func aRingTheKernelRefusesSaysWhy() {
        let available = HangMonitor.canPollLoopWakesThroughIoUring
        #expect {
            _ = try UnsafeLoopWakeRing(entries: 0)
        } throws: { error in
            guard let error = error as? SystemCallError, error.call == "io_uring_setup" else { return false }
            return available ? error.code == EINVAL : error.code != 0
        }
    }

    @Test(.enabled(if: HangMonitor.canPollLoopWakesThroughIoUring, "io_uring is not available on this machine"))
    func aPollCompletesWithItsKeyWhenItsFileIsReadyAndStaysUntilDrained() throws {
        let ring = try UnsafeLoopWakeRing(entries: 8)
        let event = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        try #require(event >= 0)
        defer { close(event) }
        #expect(ring.arm(event, key: 42))
        #expect(drained(ring).isEmpty)  // nothing ready yet
        signal(event)
        // Consumed before the drain (as a loop that runs first consumes its event): the
        // completion was posted by the wake itself and stays in the ring.
        var value: UInt64 = 0
        #expect(read(event, &value, 8) == 8)
        let completions = drained(ring)
        #expect(completions.count == 1)
        #expect(completions.first?.key == 42)
        #expect(completions.first.map { UInt32($0.result) & EPOLLIN.rawValue != 0 } == true)
        #expect(drained(ring).isEmpty)  // one poll, one completion
    }

    @Test(.enabled(if: HangMonitor.canPollLoopWakesThroughIoUring, "io_uring is not available on this machine"))
    func aPollOnAFileAlreadyReadyCompletesAtOnceAndACancelledOneAsCancelled() throws {
        let ring = try UnsafeLoopWakeRing(entries: 8)
        let ready = eventfd(1, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        let quiet = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        try #require(ready >= 0 && quiet >= 0)
        defer {
            close(ready)
            close(quiet)
        }
        #expect(ring.arm(ready, key: 7))
        #expect(ring.arm(quiet, key: 8))
        ring.cancel(key: 8)
        let completions = drained(ring).sorted { $0.key < $1.key }
        #expect(completions.map(\.key) == [7, 8, UnsafeLoopWakeRing.cancelKey], "\(completions)")
        #expect(completions.first { $0.key == 7 }.map { $0.result > 0 } == true)
        #expect(completions.first { $0.key == 8 }?.result == -ECANCELED)
    }
}
