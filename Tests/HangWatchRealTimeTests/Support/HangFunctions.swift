import Foundation
import HangWatchTestSupport
import Synchronization

// Functions tests hang in, so reports can be checked for their names. Never inlined.

/// Raised by another thread to end a spin before its time.
final class SpinStop: Sendable {
    private let raised = Atomic<Bool>(false)
    func raise() { raised.store(true, ordering: .releasing) }
    var isRaised: Bool { raised.load(ordering: .acquiring) }
}

@inline(never)
func spinInTestHang(milliseconds: Int, unless stop: SpinStop? = nil) -> UInt64 {
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
    var state: UInt64 = 1
    while DispatchTime.now().uptimeNanoseconds < end, stop?.isRaised != true {
        // A counted while loop: no iterator calls, so samples land in this function itself, and
        // long enough (about a millisecond in a debug build) that very few land in the clock
        // read or in the retain of `stop` a debug build makes around its check. Reports of
        // repeated hangs then name one and the same path (at 16,384 rounds, tens of
        // microseconds, one sample of a 150 ms hang landed in `swift_retain` in a clean-clone
        // run on 2026-11-26, and the hang got a report of its own).
        var round = 0
        while round < 262_144 {
            state = state &* 6_364_136_223_846_793_005 &+ 1
            round += 1
        }
    }
    return state
}

@inline(never)
func hangInTimerCallback(milliseconds: Int) -> UInt64 {
    spinInTestHang(milliseconds: milliseconds)
}

/// A piece under the threshold but past half of it: a near miss.
@inline(never)
func nearMissInTimerCallback(milliseconds: Int) -> UInt64 {
    spinInTestHang(milliseconds: milliseconds)
}

@inline(never)
func hangInPerformedBlock(milliseconds: Int) -> UInt64 {
    spinInTestHang(milliseconds: milliseconds)
}

@inline(never)
func hangInNestedRun(milliseconds: Int) -> UInt64 {
    spinInTestHang(milliseconds: milliseconds)
}

@inline(never)
func hangInCustomMode(milliseconds: Int) -> UInt64 {
    spinInTestHang(milliseconds: milliseconds)
}

@inline(never)
func hangWithSignalsBlocked(milliseconds: Int, signal: Int32) -> UInt64 {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, signal)
    pthread_sigmask(SIG_BLOCK, &set, nil)
    defer { pthread_sigmask(SIG_UNBLOCK, &set, nil) }
    return spinInTestHang(milliseconds: milliseconds)
}

@inline(never)
func hangWaitingForLock(_ lock: NSLock) {
    lock.lock()
    lock.unlock()
}

/// Sleeps and returns how long it really slept, in milliseconds.
@inline(never)
func hangInSleep(milliseconds: Int) -> Double {
    Blocking.sleep(milliseconds: milliseconds)
}

@inline(never)
func hangInDeclaredScope(milliseconds: Int) -> UInt64 {
    spinInTestHang(milliseconds: milliseconds)
}

@inline(never)
func hangInQueuedBlock(milliseconds: Int) -> UInt64 {
    spinInTestHang(milliseconds: milliseconds)
}
