/// One look at a hung thread: its stack if one could be taken, and its scheduler state.
package struct StackSample: Sendable, Equatable {
    package enum Method: String, Sendable {
        /// The thread unwound itself in the capture signal handler.
        case signal
        /// Unwound from outside while the thread was blocked in a system call (no signal sent).
        case syscall
        /// Still blocked in the same system call as the previous sample: its stack is reused.
        case unchanged
    }

    /// Why a stack stops before the outermost frame (`stacks[].truncation` in reports).
    package enum Truncation: String, Sendable, Equatable {
        /// The frame cap (`maxFrames`).
        case frameLimit = "frame limit"
        /// A code address without call-frame information (hand-written assembly, JIT code).
        case noUnwindInformation = "no unwind information"
        /// The next frame's memory lies outside the thread's stack and the loaded images.
        case unreadableMemory = "unreadable memory"
        /// A step did not move up the stack.
        case stackPointerDidNotAdvance = "stack pointer did not advance"
        /// A blocked thread: several frame records above the frame that needs the frame pointer
        /// check out, and they disagree.
        case framePointerAmbiguous = "frame pointer ambiguous"
        /// A blocked thread: no frame record could be proven for the frame that needs the frame pointer.
        case framePointerUnproven = "frame pointer unproven"
        /// Too many walks at once.
        case unwinderBusy = "unwinder busy"
        /// libunwind could not step (an unsupported frame).
        case unwindFailed = "unwind failed"
    }

    /// How a blocked thread's frame pointer, which `/proc` does not give, was found
    /// (`stacks[].framePointer` in reports).
    package enum FramePointerSource: String, Sendable, Equatable {
        /// From the function's prologue (its fixed frame size), the record there checked to the end.
        case prologue
        /// The one frame record that checks to the end and whose call calls the function.
        case frameRecord = "frame record"
    }

    /// Why a sample has no stack.
    package enum Failure: String, Sendable, Equatable {
        case threadExited = "thread exited"
        case threadNotAttached = "thread not attached"
        case signalBlocked = "signal blocked"
        case timeout = "timeout"
        case sendFailed = "signal send failed"
        case busy = "capture busy"
        case stopped = "thread stopped"
        case movedDuringCapture = "thread moved during capture"
        case debuggerAttached = "debugger attached"
        case sleptAtCapture = "thread slept at the capture"
        case workOnUnpreparedThread = "work on an unprepared thread"
        case firstSightingOnCPU = "first sighting on a CPU"
        case endedDuringCapture = "hang ended during the capture"
        case takingTheDump = "the thread taking this dump"
        case endedBeforeTheWatchdogRan = "ended before the watchdog ran"

        package var message: String {
            switch self {
            case .threadExited: return "the monitored thread no longer exists"
            case .threadNotAttached: return "the thread was not prepared for captures (it never ran the attach step, and could not be asked to)"
            case .signalBlocked:
                return "the thread blocks the capture signal (and, never prepared for captures, lets through no signal that could ask it to prepare)"
            case .timeout: return "the monitored thread did not answer the capture signal in time"
            case .sendFailed: return "the capture signal could not be sent"
            case .busy: return "a previous capture was still being answered"
            case .stopped: return "the thread was stopped (SIGSTOP or a debugger); no signal was sent"
            case .movedDuringCapture: return "the thread left its system call while its stack was read"
            case .debuggerAttached: return "a debugger is attached; no signal was sent (it would stop at it)"
            case .sleptAtCapture:
                return "the thread went to sleep (into a system call, or waiting) as the capture signal was about to be sent, twice; no signal was sent (it could have cut a call short)"
            case .workOnUnpreparedThread:
                return "the queue's work runs on a worker no ping has run on, which could not be found among the process's threads; the worker that ran the last ping is idle and is not shown"
            case .takingTheDump:
                return "the monitor's own thread, which took the dump"
            case .endedBeforeTheWatchdogRan:
                return "the watchdog was kept off its CPU until the hang had ended: its start and end are the loop's own, and no stack could be taken"
            case .endedDuringCapture:
                return "the loop moved on while this sample was taken: its stack could show what came after the hang, so none is kept"
            case .firstSightingOnCPU:
                return "the pool thread was on a CPU in a task the look before had not seen it in (or in none): a job's stack is taken from its second sighting on"
            }
        }
    }

    /// `CLOCK_MONOTONIC` at the sample, microseconds.
    package var microseconds: UInt64
    /// Return addresses, innermost first (the first is the exact program counter).
    package var frames: [UInt]
    package var method: Method?
    package var truncated: Bool
    /// Why the stack stops early, when it does.
    package var truncation: Truncation?
    /// How the frame pointer was found, for a blocked thread whose walk needed it.
    package var framePointer: FramePointerSource?
    /// Scheduler state letter: `R` on a CPU, `S` blocked in a system call, else from `stat`
    /// (`D`, `T`, `t`, ...).
    package var state: Character?
    /// Blocked in this system call.
    package var syscall: Int?
    /// Identity of the blocking call (number, arguments, stack pointer, program counter): an
    /// unchanged key means the thread has not moved and its stack need not be read again.
    package var blockedKey: [UInt]?
    package var onCPUNanoseconds: UInt64?
    package var runQueueNanoseconds: UInt64?
    /// Times the thread was put on a CPU so far (schedstat), when known.
    package var timeslices: UInt64?
    /// The id of the Swift task the thread ran all through the sample, when known (pool threads).
    package var taskID: UInt64?
    /// When the thread, asleep, went off its CPU (`CLOCK_MONOTONIC`, µs, from the scheduler's
    /// clock: `SchedClock`), where it was read (pool threads asleep in a job, or just out of one).
    package var offCPUSinceMicroseconds: UInt64?
    /// The thread's voluntary context switches so far, read after the sample (pool threads): one
    /// that moved between two looks slept in between, in a blocking call or parked between jobs.
    package var voluntarySwitches: UInt64?
    /// How long the signal handler held the thread.
    package var pauseNanoseconds: Int64?
    /// For a capture by signal: the thread's voluntary context switches, counted just before it was
    /// read as running once more. The next sample that counts as many knows it has not slept since.
    package var awakeVoluntarySwitches: UInt64?
    /// The capture signal arrived in a system call the thread entered after it was seen running,
    /// and cut the call short (it returned EINTR to the thread's code).
    package var cutCallShort = false
    package var failure: Failure?
    /// The async callers of the async function on the stack, when there is one.
    package var asyncCallers: AsyncCallers?

    package init(
        microseconds: UInt64, frames: [UInt], method: Method?, truncated: Bool, truncation: Truncation? = nil,
        framePointer: FramePointerSource? = nil, state: Character? = nil, syscall: Int? = nil, blockedKey: [UInt]? = nil,
        onCPUNanoseconds: UInt64? = nil, runQueueNanoseconds: UInt64? = nil, pauseNanoseconds: Int64? = nil,
        failure: Failure? = nil
    ) {
        self.microseconds = microseconds
        self.frames = frames
        self.method = method
        self.truncated = truncated
        self.truncation = truncation
        self.framePointer = framePointer
        self.state = state
        self.syscall = syscall
        self.blockedKey = blockedKey
        self.onCPUNanoseconds = onCPUNanoseconds
        self.runQueueNanoseconds = runQueueNanoseconds
        self.pauseNanoseconds = pauseNanoseconds
        self.failure = failure
    }
}

/// Takes stack samples of a thread. The real one signals or reads /proc; tests use fakes.
package protocol StackSampling: Sendable {
    /// `signalAllowed` is false while a debugger is attached: it would stop at the capture signal.
    func sample(_ thread: MonitoredThread, previous: StackSample?, signalAllowed: Bool) -> StackSample
}
