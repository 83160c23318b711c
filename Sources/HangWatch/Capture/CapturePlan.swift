/// What a capture does with a thread, decided from what was read of it: the sampler's decisions as
/// values (`LinuxStackSampler` reads the thread's `/proc` files, asks for a plan, and does what it
/// says, in that order). Every function here is pure: it reads nothing and sends nothing.
///
/// The decisions, in the order the sampler meets them: `reusesPreviousSample` (from `schedstat`
/// alone), `afterLooking` (from the `syscall` file: this plan, with the guard a signal needs,
/// `guardPlan`), then for a signal the mask (`blocks`), the guard's pause (`GuardPlan.pauses`),
/// and what the capture came to (`outcome`).
enum CapturePlan: Equatable {
    /// Blocked in the same call as the previous sample, with no CPU time since: its stack, as
    /// `.unchanged`.
    case reuseStack(BlockedCall)
    /// Blocked in a system call: its stack is read from outside (no signal, which would cut the call
    /// short), and kept only if the thread is still in the same call afterwards.
    case walkBlocked(BlockedCall)
    /// On a CPU, or blocked outside a system call: the capture signal, after the checks of `SignalPlan`.
    case signal(SignalPlan)
    /// No stack, for this reason; nothing is sent.
    case fail(StackSample.Failure)

    /// A system call a thread is blocked in, as `/proc/<tid>/syscall` gives it.
    struct BlockedCall: Equatable {
        let number: Int
        let arguments: [UInt]
        let stackPointer: UInt
        let programCounter: UInt
        /// The call's identity (`StackSample.blockedKey`): number, arguments, stack pointer, program
        /// counter. Made once, as the sampler made it before there was a plan.
        let key: [UInt]

        init(number: Int, arguments: [UInt], stackPointer: UInt, programCounter: UInt) {
            self.number = number
            self.arguments = arguments
            self.stackPointer = stackPointer
            self.programCounter = programCounter
            key = [UInt(number)] + arguments + [stackPointer, programCounter]
        }

        /// Whether `state`, read again after the walk, is still this call.
        func isSame(as state: ProcTask.SyscallState?) -> Bool {
            state == .inSyscall(number: number, arguments: arguments, stackPointer: stackPointer, programCounter: programCounter)
        }
    }

    /// What comes before the capture signal, in this order: ask whether to capture a running thread
    /// at all (false: `firstSightingOnCPU`), read its signal mask when `checkMask` (blocked:
    /// `signalBlocked`), arm `captureGuard`, send.
    struct SignalPlan: Equatable {
        /// The mask (`status`, the costliest file) may have changed since it was last known to let
        /// the signal through: at a hang's first sample, and after a capture went unanswered.
        var checkMask: Bool
        var captureGuard: GuardPlan
        /// The thread never ran the attach step: behind the same guard, it is first asked to prepare
        /// itself (`ThreadPreparer`, by a signal its mask lets through), then captured.
        var prepares = false
    }

    /// What the capture proves about the thread right before the send (`SignalGuard`).
    enum GuardPlan: Equatable {
        /// Nothing (`SignalGuard.lookAlone`).
        case none
        /// Its `syscall` file still says running (`SignalGuard.stillRunning`, or `stayedOnCPU` when
        /// `status` cannot be read).
        case stillRunning
        /// Still running with this run count: not put on a CPU again since the sample before saw it
        /// running, so it has not slept since.
        case runCount(UInt64)
        /// Count its voluntary switches, check it still runs (else it went to sleep: look again),
        /// pause `LinuxStackSampler.stayOnCPUNanoseconds` unless the sample before counted as many
        /// (`awakeVoluntarySwitches`), and send only if the count has not moved.
        case stayedOnCPU(awakeVoluntarySwitches: UInt64?)

        /// Whether a `stayedOnCPU` guard that counted `switches` pauses before the send: unless the
        /// sample before proved the thread awake at this very count.
        static func pauses(awakeVoluntarySwitches: UInt64?, switches: UInt64) -> Bool {
            awakeVoluntarySwitches != switches
        }
    }

    /// The guard a capture armed, as it went to the signal code.
    enum ArmedGuard: Equatable {
        case none
        case stillRunning
        case runCount(UInt64)
        case voluntarySwitches(UInt64)

        /// The count a capture with this guard proved the thread awake with
        /// (`StackSample.awakeVoluntarySwitches`); with the run count alone (no switch at all, so no
        /// sleep, since the sample before), that sample's count.
        func awakeVoluntarySwitches(previous: StackSample?) -> UInt64? {
            switch self {
            case .none, .stillRunning: return nil
            case .runCount: return previous?.awakeVoluntarySwitches
            case .voluntarySwitches(let switches): return switches
            }
        }
    }

    /// What a capture by signal ended in.
    enum SignalOutcome: Equatable {
        /// The stack was taken.
        case captured
        /// The thread went into a call (or slept) just before the send: look at it once more, from
        /// the start (a thread in a call is read without a signal).
        case lookAgain
        /// No stack; after a timeout, `retakeHandler`: someone may have replaced the capture handler
        /// without chaining to it.
        case fail(StackSample.Failure, retakeHandler: Bool)
    }

    /// The first decision, from `schedstat` alone (read at the sample's start): true when `previous`
    /// found the thread blocked in a system call with its stack read and it has not been put on a CPU
    /// since (same run count, same CPU time: it cannot have left the call), so `previous` stands, as
    /// `.unchanged`, and nothing more is read. Only where the kernel counts runs.
    static func reusesPreviousSample(_ previous: StackSample?, schedule: ProcTask.SchedStat) -> Bool {
        guard let previous, previous.failure == nil, previous.blockedKey != nil, !previous.frames.isEmpty,
            previous.method == .syscall || previous.method == .unchanged,
            schedule.timeslices > 0, previous.timeslices == schedule.timeslices,
            previous.onCPUNanoseconds == schedule.onCPUNanoseconds
        else { return false }
        return true
    }

    /// What one look found: `schedstat`, the `syscall` file, the state letter (`stat`'s, read only
    /// for a thread blocked outside a system call: `SyscallState.stateLetter`), and whether the
    /// thread was prepared for captures by signal (it ran the attach step, or `ThreadPreparer`
    /// prepared it: `MonitoredThread.preparedForSignals`).
    struct Look: Equatable {
        var schedule: ProcTask.SchedStat
        var kernelState: ProcTask.SyscallState
        var state: Character?
        var attached: Bool
    }

    /// The decision once the thread was looked at. A stopped thread is left alone; a thread blocked
    /// in a call is read without a signal (its stack reused while it has not run since it was last
    /// read in the same call: a thread that woke and entered the same call again may have done
    /// anything in between), prepared or not (a thread never prepared is read within the stack
    /// mapping that holds its stack pointer); a running thread is signalled only if signals are
    /// allowed (no debugger attached, which would stop at the signal, nor a caller that never
    /// signals), behind the guard `signalGuard` says, and asked to prepare itself first when it
    /// never was.
    static func afterLooking(
        _ look: Look, previous: StackSample?, signalAllowed: Bool, signalGuard: SignalGuard
    ) -> CapturePlan {
        if look.state == "T" || look.state == "t" { return .fail(.stopped) }
        if case .inSyscall(let number, let arguments, let stackPointer, let programCounter) = look.kernelState {
            let call = BlockedCall(number: number, arguments: arguments, stackPointer: stackPointer, programCounter: programCounter)
            if let previous, previous.blockedKey == call.key, !previous.frames.isEmpty,
                previous.onCPUNanoseconds == look.schedule.onCPUNanoseconds
            {
                return .reuseStack(call)
            }
            return .walkBlocked(call)
        }
        guard signalAllowed else { return .fail(look.attached ? .debuggerAttached : .threadNotAttached) }
        // A thread asked to prepare itself is asked by a signal its mask lets through: always read.
        let checkMask = !look.attached || previous == nil || previous?.failure == .timeout || previous?.failure == .signalBlocked
        return .signal(
            SignalPlan(
                checkMask: checkMask, captureGuard: guardPlan(signalGuard, schedule: look.schedule, previous: previous),
                prepares: !look.attached))
    }

    /// The guard for a thread read as running (`schedule` read at this sample's start, before it was
    /// read as running).
    static func guardPlan(_ signalGuard: SignalGuard, schedule: ProcTask.SchedStat, previous: StackSample?) -> GuardPlan {
        switch signalGuard {
        case .lookAlone:
            return .none
        case .stillRunning:
            return .stillRunning
        case .stayedOnCPU:
            // Not put on a CPU again since the sample before saw it running: it has not slept since,
            // and its run count (`schedstat`, far cheaper to read than `status`) proves it up to the send.
            if schedule.timeslices > 0, previous?.failure == nil, previous?.state == "R", previous?.timeslices == schedule.timeslices {
                return .runCount(schedule.timeslices)
            }
            return .stayedOnCPU(awakeVoluntarySwitches: previous?.awakeVoluntarySwitches)
        }
    }

    /// Whether signal mask `blocked` (`SigBlk`, bit n-1 for signal n) blocks `signal`.
    static func blocks(_ blocked: UInt64, signal: Int32) -> Bool {
        signal >= 1 && signal <= 64 && blocked & (1 << UInt64(signal - 1)) != 0
    }

    /// What a capture by signal that ended in `error` (nil: success) comes to; `lookedAgain`: this was
    /// already the second look (a thread seen going to sleep at the capture twice is left alone).
    static func outcome(_ error: UnsafeCaptureBridge.SignalCaptureError?, lookedAgain: Bool) -> SignalOutcome {
        switch error {
        case nil: return .captured
        case .sleptAtCapture?: return lookedAgain ? .fail(.sleptAtCapture, retakeHandler: false) : .lookAgain
        case .timeout?: return .fail(.timeout, retakeHandler: true)
        case .threadGone?: return .fail(.threadExited, retakeHandler: false)
        case .busy?: return .fail(.busy, retakeHandler: false)
        case .sendFailed?: return .fail(.sendFailed, retakeHandler: false)
        case .blocked?: return .fail(.signalBlocked, retakeHandler: false)
        case .notPrepared?: return .fail(.threadNotAttached, retakeHandler: false)
        }
    }
}

extension ProcTask.SyscallState {
    /// The scheduler state letter the `syscall` file alone tells: `R` running, `S` in a system call;
    /// nil for a thread blocked outside one, whose letter only `stat` (the costliest proc file) tells
    /// (stopped, or waiting on a page).
    var stateLetter: Character? {
        switch self {
        case .running: return "R"
        case .inSyscall: return "S"
        case .blockedOutsideSyscall: return nil
        }
    }
}
