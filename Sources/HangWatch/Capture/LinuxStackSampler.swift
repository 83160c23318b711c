import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Samples a thread's stack the way that does not change what the thread is doing:
///
/// - on a CPU, or blocked outside a system call: the capture signal; the thread unwinds itself.
///   Sent only once the thread is proven to compute (`SignalGuard.stayedOnCPU`): `running` in
///   `/proc` also covers a thread inside a timed wait's kernel entry, which the signal would cut
///   short; a thread that only runs in short bursts between its waits is read while it waits;
/// - blocked in a system call (`nanosleep`, `poll`, `epoll_wait`, `futex`, `read`, ...): no signal,
///   which would cut the call short with EINTR. The stack is unwound from the watchdog using the
///   stack pointer and program counter in `/proc/self/task/<tid>/syscall`, and kept only if the
///   thread is still in the same call afterwards. While it stays there, later samples reuse it.
/// - stopped (SIGSTOP, a debugger): nothing is sent.
///
/// Captures are serialized process-wide: many hung loops never mean many threads paused at once.
///
/// The watchdog's work per sample is kept small (it competes for a CPU with the hung thread when
/// they share one): the thread's proc files stay open and are re-read with `pread`, and its signal
/// mask (`status`, the costliest file) is read only at a hang's first sample and after a capture
/// went unanswered. A thread found running and not proven by its run count (not put on a CPU again
/// since the sample before saw it running) costs one more `status` read here and one in the guard
/// (its voluntary context switches), and a 50 µs pause unless the sample before proved it awake.
struct LinuxStackSampler: StackSampling {
    let signal: Int32
    let maxFrames: Int
    let timeoutNanoseconds: Int64
    let clock: any MonotonicClock
    private let files = OpenFiles()

    /// What a capture proves before it sends the signal: `stayedOnCPU`, the others only to measure
    /// what it saves.
    let signalGuard: SignalGuard

    init(
        signal: Int32, maxFrames: Int, timeoutNanoseconds: Int64, clock: any MonotonicClock,
        signalGuard: SignalGuard = .stayedOnCPU
    ) {
        self.signalGuard = signalGuard
        self.signal = signal
        self.maxFrames = maxFrames
        self.timeoutNanoseconds = timeoutNanoseconds
        self.clock = clock
    }

    private static let captureLock = Mutex(())

    /// Captures whose signal cut a system call short, process-wide (`HangMonitor.Statistics`).
    static let callsCutShort = Atomic<Int>(0)

    /// The open proc files of the monitored thread. Files opened on a thread stay bound to it: once
    /// it exits their reads fail, even if its id is reused, so its identity (start time) is checked
    /// once, when they are opened.
    private final class OpenFiles: Sendable {
        private let current = Mutex<ProcTaskFilesBox?>(nil)
        func files(for thread: MonitoredThread) -> ProcTaskFiles? {
            current.withLock { box in
                if let existing = box?.files, existing.tid == thread.tid { return existing }
                guard let opened = ProcTaskFiles(tid: thread.tid), opened.readStat()?.startTimeTicks == thread.startTimeTicks
                else {
                    box = nil
                    return nil
                }
                box = ProcTaskFilesBox(files: opened)
                return opened
            }
        }
    }

    /// True when `previous` found the thread blocked in a system call with its stack read, and the
    /// thread has not been put on a CPU since (same run count, same CPU time): it cannot have left
    /// the call, so neither `syscall` nor the stack need reading. Only where the kernel counts runs.
    static func stillBlocked(since previous: StackSample, schedule: ProcTask.SchedStat) -> Bool {
        guard previous.failure == nil, previous.blockedKey != nil, !previous.frames.isEmpty,
            previous.method == .syscall || previous.method == .unchanged,
            schedule.timeslices > 0, previous.timeslices == schedule.timeslices,
            previous.onCPUNanoseconds == schedule.onCPUNanoseconds
        else { return false }
        return true
    }

    /// The thread's voluntary context switches so far (`status`); nil when it cannot be read.
    func voluntarySwitches(of thread: MonitoredThread) -> UInt64? {
        files.files(for: thread)?.readVoluntarySwitches()
    }

    /// How long a thread seen running must stay on its CPU before it is signalled, when the sample
    /// before did not already prove it had: longer than the short bursts between the blocking calls
    /// of a thread that is mostly waiting (those threads' stacks are read without a signal instead).
    static let stayOnCPUNanoseconds = 50_000

    func sample(_ thread: MonitoredThread, previous: StackSample?, signalAllowed: Bool) -> StackSample {
        sample(thread, previous: previous, signalAllowed: signalAllowed, capturesRunning: { true }, lookedAgain: false)
    }

    /// A sample that, where the thread is read as running, first asks `capturesRunning` whether to
    /// capture it at all (false: its state and times only, failure `firstSightingOnCPU`; no signal).
    func sample(
        _ thread: MonitoredThread, previous: StackSample?, signalAllowed: Bool, capturesRunning: () -> Bool
    ) -> StackSample {
        sample(thread, previous: previous, signalAllowed: signalAllowed, capturesRunning: capturesRunning, lookedAgain: false)
    }

    /// `lookedAgain`: the thread was seen running, then in a call just before the signal; this is the
    /// second look (a thread seen so twice is left alone).
    private func sample(
        _ thread: MonitoredThread, previous: StackSample?, signalAllowed: Bool, capturesRunning: () -> Bool, lookedAgain: Bool
    ) -> StackSample {
        let task = ProcTask(tid: thread.tid)
        var sample = StackSample(microseconds: clock.microseconds(), frames: [], method: nil, truncated: false)
        guard let files = files.files(for: thread), let schedule = files.readSchedStat() else {
            sample.failure = .threadExited
            return sample
        }
        sample.onCPUNanoseconds = schedule.onCPUNanoseconds
        sample.runQueueNanoseconds = schedule.runQueueNanoseconds
        sample.timeslices = schedule.timeslices
        if let previous, Self.stillBlocked(since: previous, schedule: schedule) {
            // Not put on a CPU since it was seen blocked: still in that call, same stack.
            var unchanged = previous
            unchanged.microseconds = sample.microseconds
            unchanged.runQueueNanoseconds = schedule.runQueueNanoseconds
            unchanged.method = .unchanged
            unchanged.pauseNanoseconds = nil
            return unchanged
        }
        guard let kernelState = files.readSyscall() else {
            sample.failure = .threadExited
            return sample
        }
        // The syscall file tells running from blocked; `stat` (the costliest proc file) is read only
        // for a thread blocked outside a system call, to tell stopped from waiting on a page.
        switch kernelState {
        case .running: sample.state = "R"
        case .inSyscall: sample.state = "S"
        case .blockedOutsideSyscall: sample.state = files.readStat()?.state
        }
        if sample.state == "T" || sample.state == "t" {
            sample.failure = .stopped
            return sample
        }
        guard thread.stackHigh != 0 else {
            sample.failure = .threadNotAttached
            return sample
        }
        if case .inSyscall(let number, let arguments, let stackPointer, let programCounter) = kernelState {
            sample.syscall = number
            let key = [UInt(number)] + arguments + [stackPointer, programCounter]
            sample.blockedKey = key
            // Unchanged only if the thread has not run since (no CPU time): a thread that woke and
            // entered the same call again may have done anything in between.
            if let previous, previous.blockedKey == key, !previous.frames.isEmpty,
                previous.onCPUNanoseconds == sample.onCPUNanoseconds
            {
                sample.frames = previous.frames
                sample.truncated = previous.truncated
                sample.truncation = previous.truncation
                sample.framePointer = previous.framePointer
                sample.asyncCallers = previous.asyncCallers
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
            guard case .inSyscall(number, arguments, stackPointer, programCounter)? = files.readSyscall() else {
                sample.failure = .movedDuringCapture
                return sample
            }
            sample.frames = walk.frames
            sample.truncated = walk.flags.isTruncated
            sample.truncation = walk.flags.truncation
            sample.framePointer = walk.flags.framePointer
            sample.asyncCallers = walk.asyncCallers
            sample.method = .syscall
            return sample
        }
        guard signalAllowed else {
            sample.failure = .debuggerAttached
            return sample
        }
        if !capturesRunning() {
            sample.failure = .firstSightingOnCPU
            return sample
        }
        let maskMayHaveChanged = previous == nil || previous?.failure == .timeout || previous?.failure == .signalBlocked
        if maskMayHaveChanged, let blocked = task.blockedSignals(), signal >= 1, signal <= 64,
            blocked & (1 << UInt64(signal - 1)) != 0
        {
            sample.failure = .signalBlocked
            return sample
        }
        // The signal must not cut short a timed wait the thread went into since it was read as
        // running: the guard (and the pause it may need) is checked right before the send.
        let capture: Result<UnsafeCaptureBridge.SignalCapture, UnsafeCaptureBridge.SignalCaptureError>
        var armed: UnsafeCaptureBridge.CaptureGuard?
        switch arm(files, schedule: schedule, previous: previous) {
        case .send(let captureGuard):
            armed = captureGuard
            capture = Self.captureLock.withLock { _ in
                UnsafeCaptureBridge.captureBySignal(
                    tid: thread.tid, guard: captureGuard, stackLow: thread.stackLow, stackHigh: thread.stackHigh, signal: signal,
                    maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds)
            }
        case .wentToSleep:
            capture = .failure(.sleptAtCapture)
        }
        switch capture {
        case .success(let result):
            sample.frames = result.frames
            sample.truncated = result.flags.isTruncated
            sample.truncation = result.flags.truncation
            sample.pauseNanoseconds = result.pauseNanoseconds
            sample.asyncCallers = result.asyncCallers
            sample.cutCallShort = result.cutCallShort
            // The count this capture proved the thread awake with; when the run count alone proved it
            // (no switch at all, so no sleep, since the sample before), that sample's count.
            if let armed, armed.statusFile >= 0 {
                sample.awakeVoluntarySwitches = armed.voluntarySwitches
            } else if let armed, armed.schedStatFile >= 0 {
                sample.awakeVoluntarySwitches = previous?.awakeVoluntarySwitches
            }
            if result.cutCallShort { Self.callsCutShort.add(1, ordering: .relaxed) }
            sample.method = .signal
        case .failure(.sleptAtCapture):
            // In a call now, or slept since: look again (a thread in a call is read without a signal).
            if lookedAgain {
                sample.failure = .sleptAtCapture
            } else {
                return self.sample(
                    thread, previous: previous, signalAllowed: signalAllowed, capturesRunning: capturesRunning, lookedAgain: true)
            }
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

/// What a capture by signal proves about the thread right before it sends the signal. The signal
/// ends a timed wait (`nanosleep`, `poll`, `epoll_wait`, a timed futex) the thread is in with EINTR,
/// and `running` in `/proc` also covers a thread already inside such a call's kernel entry.
package enum SignalGuard: Int, Sendable, CaseIterable {
    /// Nothing: the look that read the thread as running is all (measurement only).
    case lookAlone
    /// Its `syscall` file read again right before the send still says `running` (measurement only).
    case stillRunning
    /// It also has not slept since it was read as running (its voluntary context switches, in
    /// `status`, are as many; being preempted is no sleep), and it has computed for at least
    /// `stayOnCPUNanoseconds` (or since the sample before, which counted as many when it saw it
    /// running, or saw it running with the run count it still has): a thread that mostly waits,
    /// with short bursts between its calls, is not signalled.
    case stayedOnCPU
}

extension LinuxStackSampler {
    fileprivate enum Arming {
        /// Send, checking this guard right before (nil: none).
        case send(UnsafeCaptureBridge.CaptureGuard?)
        /// The thread went into a system call before the guard could be armed: look again.
        case wentToSleep
    }

    /// The guard for a thread read as running (schedstat `schedule`, read at this sample's start,
    /// before it was read as running), after the pause it needs.
    fileprivate func arm(_ files: ProcTaskFiles, schedule: ProcTask.SchedStat, previous: StackSample?) -> Arming {
        switch signalGuard {
        case .lookAlone:
            return .send(nil)
        case .stillRunning:
            return .send(UnsafeCaptureBridge.CaptureGuard(syscallFile: files.syscallDescriptor))
        case .stayedOnCPU:
            // Not put on a CPU again since the sample before saw it running: it has not slept since,
            // and its run count (`schedstat`, far cheaper to read than `status`) proves it up to the send.
            if schedule.timeslices > 0, previous?.failure == nil, previous?.state == "R", previous?.timeslices == schedule.timeslices {
                return .send(
                    UnsafeCaptureBridge.CaptureGuard(
                        syscallFile: files.syscallDescriptor, schedStatFile: files.schedStatDescriptor, runCount: schedule.timeslices))
            }
            // Without the count of voluntary switches only the last read can be checked.
            guard let switches = files.readVoluntarySwitches() else {
                return .send(UnsafeCaptureBridge.CaptureGuard(syscallFile: files.syscallDescriptor))
            }
            // The count proves no sleep from the moment it was read; the thread must be running after
            // that moment (a thread asleep when it was counted could wake and go to sleep again
            // without the count moving before the guard reads it).
            guard case .running? = files.readSyscall() else { return .wentToSleep }
            // The sample before counted as many when it saw the thread running: it has not slept since.
            let awakeSincePrevious = previous?.awakeVoluntarySwitches == switches
            if !awakeSincePrevious {
                var pause = timespec(tv_sec: 0, tv_nsec: Self.stayOnCPUNanoseconds)
                nanosleep(&pause, nil)
            }
            return .send(
                UnsafeCaptureBridge.CaptureGuard(
                    syscallFile: files.syscallDescriptor, statusFile: files.statusDescriptor, voluntarySwitches: switches))
        }
    }
}

/// Lets the (non-Sendable) open files live in a Mutex; only the watchdog thread uses them.
struct ProcTaskFilesBox: @unchecked Sendable {
    let files: ProcTaskFiles
}
