import Foundation

// Functions tests hang in, so reports can be checked for their names. Never inlined.

@inline(never)
func spinInTestHang(milliseconds: Int) -> UInt64 {
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
    var state: UInt64 = 1
    while DispatchTime.now().uptimeNanoseconds < end {
        // A counted while loop: no iterator calls, so samples land in this function itself.
        var round = 0
        while round < 256 {
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
    let start = DispatchTime.now().uptimeNanoseconds
    usleep(useconds_t(milliseconds * 1000))
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

@inline(never)
func hangInDeclaredScope(milliseconds: Int) -> UInt64 {
    spinInTestHang(milliseconds: milliseconds)
}

@inline(never)
func hangInQueuedBlock(milliseconds: Int) -> UInt64 {
    spinInTestHang(milliseconds: milliseconds)
}
