import Synchronization

/// Samples a thread's stack the way that does not change what the thread is doing:
///
/// - on a CPU, or blocked outside a system call: the capture signal; the thread unwinds itself;
/// - blocked in a system call (`nanosleep`, `poll`, `epoll_wait`, `futex`, `read`, ...): no signal,
///   which would cut the call short with EINTR. The stack is unwound from the watchdog using the
///   stack pointer and program counter in `/proc/self/task/<tid>/syscall`, and kept only if the
///   thread is still in the same call afterwards. While it stays there, later samples reuse it.
/// - stopped (SIGSTOP, a debugger): nothing is sent.
///
/// Captures are serialized process-wide: many hung loops never mean many threads paused at once.
struct LinuxStackSampler: StackSampling {
    let signal: Int32
    let maxFrames: Int
    let timeoutNanoseconds: Int64
    let clock: any MonotonicClock

    private static let captureLock = Mutex(())

    func sample(_ thread: MonitoredThread, previous: StackSample?) -> StackSample {
        let task = ProcTask(tid: thread.tid)
        var sample = StackSample(microseconds: clock.microseconds(), frames: [], method: nil, truncated: false)
        guard let stat = task.stat(), stat.startTimeTicks == thread.startTimeTicks else {
            sample.failure = .threadExited
            return sample
        }
        sample.state = stat.state
        if let schedule = task.schedStat() {
            sample.onCPUNanoseconds = schedule.onCPUNanoseconds
            sample.runQueueNanoseconds = schedule.runQueueNanoseconds
        }
        if stat.state == "T" || stat.state == "t" {
            sample.failure = .stopped
            return sample
        }
        guard thread.stackHigh != 0 else {
            sample.failure = .threadNotAttached
            return sample
        }
        if case .inSyscall(let number, let arguments, let stackPointer, let programCounter)? = task.syscall() {
            sample.syscall = number
            let key = [UInt(number)] + arguments + [stackPointer, programCounter]
            sample.blockedKey = key
            if let previous, previous.blockedKey == key, !previous.frames.isEmpty {
                sample.frames = previous.frames
                sample.truncated = previous.truncated
                sample.method = .unchanged
                return sample
            }
            let walk = Self.captureLock.withLock { _ in
                UnsafeCaptureBridge.captureBlocked(
                    stackPointer: stackPointer, programCounter: programCounter, stackLow: thread.stackLow,
                    stackHigh: thread.stackHigh, maxFrames: maxFrames)
            }
            // The stack was read while the thread slept; it is only trustworthy if it still sleeps
            // in the same call.
            guard case .inSyscall(number, arguments, stackPointer, programCounter)? = task.syscall() else {
                sample.failure = .movedDuringCapture
                return sample
            }
            sample.frames = walk.frames
            sample.truncated = walk.flags.isTruncated
            sample.method = .syscall
            return sample
        }
        if let blocked = task.blockedSignals(), signal >= 1, signal <= 64, blocked & (1 << UInt64(signal - 1)) != 0 {
            sample.failure = .signalBlocked
            return sample
        }
        let capture = Self.captureLock.withLock { _ in
            UnsafeCaptureBridge.captureBySignal(
                tid: thread.tid, stackLow: thread.stackLow, stackHigh: thread.stackHigh, signal: signal, maxFrames: maxFrames,
                timeoutNanoseconds: timeoutNanoseconds)
        }
        switch capture {
        case .success(let result):
            sample.frames = result.frames
            sample.truncated = result.flags.isTruncated
            sample.pauseNanoseconds = result.pauseNanoseconds
            sample.method = .signal
        case .failure(.timeout):
            sample.failure = .timeout
            // Someone may have replaced our handler without chaining to it: take it back, keeping
            // theirs as the one we chain to.
            if !UnsafeCaptureBridge.handlerIsCurrent(signal: signal) {
                try? UnsafeCaptureBridge.install(signal: signal)
            }
        case .failure(.threadGone):
            sample.failure = .threadExited
        case .failure(.busy):
            sample.failure = .busy
        case .failure(.sendFailed):
            sample.failure = .sendFailed
        }
        return sample
    }
}
