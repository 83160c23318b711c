@_spi(Internal) import HangWatchReport
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
/// Which of these a sample does is decided by `CapturePlan` (pure, tested as tables); this type
/// reads the thread's `/proc` files, asks it, and does what it says.
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
    /// What every sampler of the process shares: the preparer of threads that never ran the attach
    /// step (before their first capture by signal), the count of calls cut short.
    let inspection: ThreadInspection
    private var preparer: ThreadPreparer { inspection.preparer }

    /// What a capture proves before it sends the signal: `stayedOnCPU`, the others only to measure
    /// what it saves.
    let signalGuard: SignalGuard

    /// Made by `ThreadInspection.sampler` only (the one way to look at a thread).
    init(
        inspection: ThreadInspection, signal: Int32, maxFrames: Int, timeoutNanoseconds: Int64, clock: any MonotonicClock,
        signalGuard: SignalGuard
    ) {
        self.inspection = inspection
        self.signalGuard = signalGuard
        self.signal = signal
        self.maxFrames = maxFrames
        self.timeoutNanoseconds = timeoutNanoseconds
        self.clock = clock
    }

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
    ///
    /// Reads the thread's `schedstat`, then (unless `CapturePlan.reusesPreviousSample`) its `syscall`
    /// file (and `stat` for a thread blocked outside a system call), and does what
    /// `CapturePlan.afterLooking` decides.
    private func sample(
        _ given: MonitoredThread, previous: StackSample?, signalAllowed: Bool, capturesRunning: () -> Bool, lookedAgain: Bool
    ) -> StackSample {
        // A thread that never ran the attach step may have been prepared since (by any sampler).
        let thread = given.preparedForSignals ? given : (preparer.prepared(given) ?? given)
        var sample = StackSample(microseconds: clock.microseconds(), frames: [], method: nil, truncated: false)
        guard let files = files.files(for: thread), let schedule = files.readSchedStat() else {
            sample.failure = .threadExited
            return sample
        }
        sample.onCPUNanoseconds = schedule.onCPUNanoseconds
        sample.runQueueNanoseconds = schedule.runQueueNanoseconds
        sample.timeslices = schedule.timeslices
        if let previous, CapturePlan.reusesPreviousSample(previous, schedule: schedule) {
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
        sample.state = kernelState.stateLetter ?? files.readStat()?.state
        let look = CapturePlan.Look(schedule: schedule, kernelState: kernelState, state: sample.state, attached: thread.preparedForSignals)
        switch CapturePlan.afterLooking(look, previous: previous, signalAllowed: signalAllowed, signalGuard: signalGuard) {
        case .fail(let reason):
            sample.failure = reason
        case .reuseStack(let call):
            sample.syscall = call.number
            sample.blockedKey = call.key
            if let previous {
                sample.frames = previous.frames
                sample.truncated = previous.truncated
                sample.truncation = previous.truncation
                sample.framePointer = previous.framePointer
                sample.asyncCallers = previous.asyncCallers
            }
            sample.method = .unchanged
        case .walkBlocked(let call):
            walkBlocked(call, of: thread, files: files, into: &sample)
        case .signal(let plan):
            guard capturesRunning() else {
                sample.failure = .firstSightingOnCPU
                return sample
            }
            let blocked = plan.checkMask ? ProcTask(tid: thread.tid).blockedSignals() : nil
            if !plan.prepares, let blocked, CapturePlan.blocks(blocked, signal: signal) {
                sample.failure = .signalBlocked
                return sample
            }
            let outcome = signal(
                thread, files: files, captureGuard: plan.captureGuard, prepareWithMask: plan.prepares ? .some(blocked) : nil,
                previous: previous, lookedAgain: lookedAgain, into: &sample)
            if outcome == .lookAgain {
                return self.sample(
                    thread, previous: previous, signalAllowed: signalAllowed, capturesRunning: capturesRunning, lookedAgain: true)
            }
        }
        return sample
    }

    /// Reads the stack of a thread blocked in `call` from outside. The stack was read while the
    /// thread slept; it is only trustworthy if it still sleeps in the same call afterwards.
    private func walkBlocked(
        _ call: CapturePlan.BlockedCall, of given: MonitoredThread, files: ProcTaskFiles, into sample: inout StackSample
    ) {
        sample.syscall = call.number
        sample.blockedKey = call.key
        var thread = given
        if thread.stackHigh == 0 {
            // Never prepared: within the stack mapping that holds its stack pointer.
            guard let mapping = StackMapping.readAll().first(where: { $0.contains(call.stackPointer) }) else {
                sample.failure = .threadNotAttached
                return
            }
            thread.stackLow = mapping.start
            thread.stackHigh = mapping.end
        }
        let walk = UnsafeCaptureBridge.captureSlot.withLock { _ in
            UnsafeCaptureBridge.captureBlocked(
                stackPointer: call.stackPointer, programCounter: call.programCounter, stackLow: thread.stackLow,
                stackHigh: thread.stackHigh, maxFrames: maxFrames)
        }
        guard call.isSame(as: files.readSyscall()) else {
            sample.failure = .movedDuringCapture
            return
        }
        sample.frames = walk.frames
        sample.truncated = walk.flags.isTruncated
        sample.truncation = walk.flags.truncation
        sample.framePointer = walk.flags.framePointer
        sample.asyncCallers = walk.asyncCallers
        sample.method = .syscall
    }

    /// Arms `captureGuard` and sends the capture signal. The signal must not cut short a timed wait
    /// the thread went into since it was read as running: the guard (and the pause it may need) is
    /// checked right before the send.
    ///
    /// `prepareWithMask`: the thread never ran the attach step; it is first asked, behind the same
    /// guard, to prepare itself, its mask (read just before) deciding by which signal.
    private func signal(
        _ thread: MonitoredThread, files: ProcTaskFiles, captureGuard: CapturePlan.GuardPlan, prepareWithMask: UInt64??,
        previous: StackSample?, lookedAgain: Bool, into sample: inout StackSample
    ) -> CapturePlan.SignalOutcome {
        var capture: Result<UnsafeCaptureBridge.SignalCapture, UnsafeCaptureBridge.SignalCaptureError>
        var armed: CapturePlan.ArmedGuard?
        if let armedGuard = arm(captureGuard, files) {
            armed = armedGuard
            capture = UnsafeCaptureBridge.captureSlot.withLock { _ in
                var target = thread
                if let mask = prepareWithMask {
                    switch preparer.prepare(
                        thread, blocked: mask, captureSignal: signal, guard: armedGuard.captureGuard(files),
                        timeoutNanoseconds: timeoutNanoseconds)
                    {
                    case .success(let prepared):
                        target = prepared.thread
                        if prepared.cutCallShort {
                            sample.cutCallShort = true
                            inspection.callsCutShort.add(1, ordering: .relaxed)
                        }
                    case .failure(.sleptAtPreparation): return .failure(.sleptAtCapture)
                    case .failure(.capture(let error)): return .failure(error)
                    case .failure(.noSignalGetsThrough): return .failure(.blocked)
                    case .failure(.stackNotFound): return .failure(.notPrepared)
                    }
                }
                return UnsafeCaptureBridge.captureBySignal(
                    tid: target.tid, guard: armedGuard.captureGuard(files), stackLow: target.stackLow, stackHigh: target.stackHigh,
                    signal: signal, maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds)
            }
        } else {
            capture = .failure(.sleptAtCapture)
        }
        let outcome: CapturePlan.SignalOutcome
        switch capture {
        case .success(let result):
            outcome = CapturePlan.outcome(nil, lookedAgain: lookedAgain)
            sample.frames = result.frames
            sample.truncated = result.flags.isTruncated
            sample.truncation = result.flags.truncation
            sample.pauseNanoseconds = result.pauseNanoseconds
            sample.asyncCallers = result.asyncCallers
            sample.cutCallShort = sample.cutCallShort || result.cutCallShort
            sample.awakeVoluntarySwitches = armed?.awakeVoluntarySwitches(previous: previous)
            if result.cutCallShort { inspection.callsCutShort.add(1, ordering: .relaxed) }
            sample.method = .signal
        case .failure(let error):
            outcome = CapturePlan.outcome(error, lookedAgain: lookedAgain)
            guard case .fail(let reason, let retakeHandler) = outcome else { break }
            sample.failure = reason
            // Someone may have replaced our handler without chaining to it: take it back, keeping
            // theirs as the one we chain to.
            if retakeHandler, !UnsafeCaptureBridge.handlerIsCurrent(signal: signal) {
                try? UnsafeCaptureBridge.install(signal: signal)
            }
        }
        return outcome
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
    /// Arms `plan` (after the pause it needs); nil: the thread went into a system call before the
    /// guard could be armed (look again).
    fileprivate func arm(_ plan: CapturePlan.GuardPlan, _ files: ProcTaskFiles) -> CapturePlan.ArmedGuard? {
        switch plan {
        case .none: return CapturePlan.ArmedGuard.none
        case .stillRunning: return .stillRunning
        case .runCount(let count): return .runCount(count)
        case .stayedOnCPU(let awakeVoluntarySwitches):
            // Without the count of voluntary switches only the last read can be checked.
            guard let switches = files.readVoluntarySwitches() else { return .stillRunning }
            // The count proves no sleep from the moment it was read; the thread must be running after
            // that moment (a thread asleep when it was counted could wake and go to sleep again
            // without the count moving before the guard reads it).
            guard case .running? = files.readSyscall() else { return nil }
            if CapturePlan.GuardPlan.pauses(awakeVoluntarySwitches: awakeVoluntarySwitches, switches: switches) {
                var pause = timespec(tv_sec: 0, tv_nsec: Self.stayOnCPUNanoseconds)
                nanosleep(&pause, nil)
            }
            return .voluntarySwitches(switches)
        }
    }
}

extension CapturePlan.ArmedGuard {
    /// The guard as the signal code takes it: `files`' descriptors to read right before the send
    /// (nil: none).
    fileprivate func captureGuard(_ files: ProcTaskFiles) -> UnsafeCaptureBridge.CaptureGuard? {
        switch self {
        case .none:
            return nil
        case .stillRunning:
            return UnsafeCaptureBridge.CaptureGuard(syscallFile: files.syscallDescriptor)
        case .runCount(let count):
            return UnsafeCaptureBridge.CaptureGuard(
                syscallFile: files.syscallDescriptor, schedStatFile: files.schedStatDescriptor, runCount: count)
        case .voluntarySwitches(let switches):
            return UnsafeCaptureBridge.CaptureGuard(
                syscallFile: files.syscallDescriptor, statusFile: files.statusDescriptor, voluntarySwitches: switches)
        }
    }
}

/// Lets the (non-Sendable) open files live in a Mutex; only the watchdog thread uses them.
struct ProcTaskFilesBox: @unchecked Sendable {
    let files: ProcTaskFiles
}
