import CHangWatchCapture
import Synchronization
@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// The capture and the blocked-thread walk of the C target: a signal capture (and the preparation
/// of a thread that never attached), a walk from `/proc`'s registers, the handler's install. Like every
/// file of `Bridge/` (the only Swift that imports the C target), it converts between C structs and
/// Swift values; every decision (when, whom, how long) is made by its callers.
enum UnsafeCaptureBridge {
    /// Mirrors the `HW_UNWIND_*` result flags.
    struct UnwindFlags: OptionSet, Sendable {
        let rawValue: Int32
        static let endOfStack = UnwindFlags(rawValue: Int32(HW_UNWIND_END_OF_STACK))
        static let truncated = UnwindFlags(rawValue: Int32(HW_UNWIND_TRUNCATED))
        static let error = UnwindFlags(rawValue: Int32(HW_UNWIND_ERROR))
        static let noProgress = UnwindFlags(rawValue: Int32(HW_UNWIND_NO_PROGRESS))
        static let initFailed = UnwindFlags(rawValue: Int32(HW_UNWIND_INIT_FAILED))
        static let busy = UnwindFlags(rawValue: Int32(HW_UNWIND_BUSY))
        static let readsRejected = UnwindFlags(rawValue: Int32(HW_UNWIND_READS_REJECTED))
        static let noUnwindInfo = UnwindFlags(rawValue: Int32(HW_UNWIND_NO_UNWIND_INFO))
        static let framePointerFromPrologue = UnwindFlags(rawValue: Int32(HW_UNWIND_FP_PROLOGUE))
        static let framePointerFromRecord = UnwindFlags(rawValue: Int32(HW_UNWIND_FP_RECORD))
        static let framePointerAmbiguous = UnwindFlags(rawValue: Int32(HW_UNWIND_FP_AMBIGUOUS))
        static let framePointerUnproven = UnwindFlags(rawValue: Int32(HW_UNWIND_FP_UNPROVEN))

        /// The walk stopped before the outermost frame.
        var isTruncated: Bool { !contains(.endOfStack) }

        /// Why the walk stopped before the outermost frame; nil when it did not.
        var truncation: StackSample.Truncation? {
            guard isTruncated else { return nil }
            if contains(.truncated) { return .frameLimit }
            if contains(.framePointerAmbiguous) { return .framePointerAmbiguous }
            if contains(.framePointerUnproven) { return .framePointerUnproven }
            if contains(.busy) { return .unwinderBusy }
            if contains(.noUnwindInfo) { return .noUnwindInformation }
            if contains(.noProgress) { return .stackPointerDidNotAdvance }
            if contains(.readsRejected) || contains(.initFailed) { return .unreadableMemory }
            return .unwindFailed
        }

        /// How a blocked thread's frame pointer was found, when the walk needed it.
        var framePointer: StackSample.FramePointerSource? {
            if contains(.framePointerFromPrologue) { return .prologue }
            if contains(.framePointerFromRecord) { return .frameRecord }
            return nil
        }
    }

    static let maxFrames = Int(HW_MAX_FRAMES)

    /// Installs the capture handler for `signal`. Idempotent.
    static func install(signal: Int32) throws {
        _ = UnsafeImageTable.jobRunAddress
        let result = hw_capture_install(signal)
        if result != 0 {
            throw HangMonitorError.captureUnavailable(
                reason: "installing the handler for signal \(signal) failed: \(SystemCallError(call: "sigaction", code: result).reason)")
        }
    }

    static func handlerIsCurrent(signal: Int32) -> Bool {
        hw_capture_handler_is_current(signal) == 1
    }

    struct Attachment: Sendable, Equatable {
        var tid: Int32
        var stackLow: UInt
        var stackHigh: UInt
        var installedAlternateStack: Bool
        var alternateStackError: Int32?
    }

    /// Prepares the calling thread for captures. Call on the monitored thread.
    static func attachCurrentThread(alternateStackSize: Int, signal: Int32) -> Attachment {
        let result = hw_capture_thread_attach(alternateStackSize, signal)
        var low: UInt = 0
        var high: UInt = 0
        _ = hw_current_thread_stack(&low, &high)
        return Attachment(
            tid: hw_gettid(), stackLow: low, stackHigh: high, installedAlternateStack: result == 1,
            alternateStackError: result < 0 ? -result : nil)
    }

    static func currentThreadID() -> Int32 {
        hw_gettid()
    }

    /// Unblocks `signal` for the calling thread (the watchdog's: dump requests are queued to it).
    static func unblockOnCurrentThread(signal: Int32) {
        hw_capture_thread_unblock(signal)
    }

    /// The calling thread's stack bounds (`pthread_getattr_np`: a glibc thread's whole stack block,
    /// its descriptor at the top included); nil when they cannot be read.
    static func currentThreadStack() -> (low: UInt, high: UInt)? {
        var low: UInt = 0
        var high: UInt = 0
        guard hw_current_thread_stack(&low, &high) == 0, high > low else { return nil }
        return (low, high)
    }

    struct SignalCapture: Sendable {
        var frames: [UInt]
        var flags: UnwindFlags
        var pauseNanoseconds: Int64
        var asyncCallers: AsyncCallers?
        /// The signal arrived in a system call and cut it short: the call returns EINTR.
        var cutCallShort: Bool
    }

    private static func asyncCallers(_ chain: hw_async_chain) -> AsyncCallers? {
        guard chain.after >= 0 else { return nil }
        var copy = chain
        let count = Int(max(0, min(chain.count, HW_MAX_ASYNC_FRAMES)))
        let addresses = withUnsafeBytes(of: &copy.resume) { Array($0.bindMemory(to: UInt.self).prefix(count)) }
        let end: AsyncCallers.End
        switch Int32(chain.status) {
        case Int32(HW_ASYNC_COMPLETE): end = .complete
        case Int32(HW_ASYNC_LIMIT): end = .limit
        case Int32(HW_ASYNC_UNREADABLE): end = .unreadable
        default: end = .invalid
        }
        var callers = AsyncCallers(after: Int(chain.after), resumeAddresses: addresses, end: end)
        callers.contexts = chain.first_context == 0 ? nil : (UInt(chain.first_context), UInt(chain.last_context))
        return callers
    }

    enum SignalCaptureError: Error, Equatable {
        case busy
        /// The guard, checked just before the send, did not hold (the thread is in a system call, or
        /// slept since it was counted): nothing was sent.
        case sleptAtCapture
        case threadGone
        case sendFailed(Int32)
        case timeout
        /// A thread that never ran the attach step lets through no signal that may ask it to
        /// prepare itself (`ThreadPreparer`): nothing was sent.
        case blocked
        /// It prepared itself, but its stack pointer lies in no stack mapping: not captured.
        case notPrepared

        /// What a request's send (`hw_capture_request`, `hw_prepare_request`) returned, as an
        /// error; nil when it was sent.
        init?(sent: Int32) {
            switch sent {
            case 0: return nil
            case EBUSY: self = .busy
            case EAGAIN: self = .sleptAtCapture
            case ESRCH: self = .threadGone
            default: self = .sendFailed(sent)
            }
        }
    }

    /// Mirrors `hw_capture_guard`: what the thread's `/proc` files must still say right before the
    /// send (`syscall`: running; `schedstat`, unless -1: the same run count; `status`, unless -1: as
    /// many voluntary context switches).
    struct CaptureGuard: Sendable, Equatable {
        var syscallFile: Int32
        var schedStatFile: Int32 = -1
        var runCount: UInt64 = 0
        var statusFile: Int32 = -1
        var voluntarySwitches: UInt64 = 0
    }

    /// `body` with the C form of `captureGuard` (nil: none).
    private static func withGuard(_ captureGuard: CaptureGuard?, _ body: (UnsafePointer<hw_capture_guard>?) -> Int32) -> Int32 {
        guard let captureGuard else { return body(nil) }
        var cGuard = hw_capture_guard(
            syscall_fd: captureGuard.syscallFile, schedstat_fd: captureGuard.schedStatFile, run_count: captureGuard.runCount,
            status_fd: captureGuard.statusFile, voluntary_switches: captureGuard.voluntarySwitches)
        return body(&cGuard)
    }

    /// The C side keeps one capture slot and one blocked-thread walk state for the process: a signal
    /// capture (with the preparation before it) or a walk holds this while it runs.
    static let captureSlot = Mutex(())

    /// Signals thread `tid` and waits up to `timeoutNanoseconds` for it to unwind itself. With a
    /// `guard`, nothing is sent unless it holds right before the send; nil sends whatever the thread
    /// is doing.
    static func captureBySignal(
        tid: Int32, guard captureGuard: CaptureGuard?, stackLow: UInt, stackHigh: UInt, signal: Int32, maxFrames: Int,
        timeoutNanoseconds: Int64
    ) -> Result<SignalCapture, SignalCaptureError> {
        var generation: UInt64 = 0
        let sent = withGuard(captureGuard) { hw_capture_request(tid, $0, stackLow, stackHigh, signal, Int32(maxFrames), &generation) }
        if let refused = SignalCaptureError(sent: sent) { return .failure(refused) }
        var result = hw_capture_result()
        guard hw_capture_wait(generation, timeoutNanoseconds, &result) == 0 else {
            return .failure(.timeout)
        }
        let count = Int(max(0, min(result.frame_count, HW_MAX_FRAMES)))
        let frames = withUnsafeBytes(of: &result.frames) { raw in
            Array(raw.bindMemory(to: UInt.self).prefix(count))
        }
        return .success(
            SignalCapture(
                frames: frames, flags: UnwindFlags(rawValue: result.flags),
                pauseNanoseconds: result.handler_exit_ns - result.handler_entry_ns,
                asyncCallers: asyncCallers(result.async_chain), cutCallShort: result.cut_call_short != 0))
    }

    /// What a thread asked to prepare itself answered (`hw_prepare_result`).
    struct PrepareAnswer: Sendable, Equatable {
        var stackPointer: UInt
        var threadPointer: UInt
        /// It had an alternate signal stack of its own (the one given was not taken).
        var hadAlternateStack: Bool
        /// It took the alternate stack given.
        var tookAlternateStack: Bool
        var cutCallShort: Bool
    }

    /// Asks thread `tid`, by `signal` (the capture signal, or another whose handler is ours), to take
    /// `alternateStack` unless it has one, to let `captureSignal` through from now on, and to say
    /// where its stack is; behind `guard` as a capture is. On a timeout the thread may still take
    /// the stack later: the caller must then keep it mapped.
    static func prepareBySignal(
        tid: Int32, guard captureGuard: CaptureGuard?, signal: Int32, captureSignal: Int32,
        alternateStack: UnsafeMutableRawBufferPointer?, timeoutNanoseconds: Int64
    ) -> Result<PrepareAnswer, SignalCaptureError> {
        var generation: UInt64 = 0
        let stack = alternateStack?.baseAddress
        let size = alternateStack?.count ?? 0
        let sent = withGuard(captureGuard) { hw_prepare_request(tid, $0, signal, captureSignal, stack, size, &generation) }
        if let refused = SignalCaptureError(sent: sent) { return .failure(refused) }
        var result = hw_prepare_result()
        guard hw_prepare_wait(generation, timeoutNanoseconds, &result) == 0 else { return .failure(.timeout) }
        return .success(
            PrepareAnswer(
                stackPointer: UInt(result.stack_pointer), threadPointer: UInt(result.thread_pointer),
                hadAlternateStack: result.had_alternate_stack != 0, tookAlternateStack: result.took_alternate_stack != 0,
                cutCallShort: result.cut_call_short != 0))
    }

    /// What handles a signal now.
    enum Disposition: Equatable {
        case defaultAction, ignored, handler, unknown
    }

    static func disposition(of signal: Int32) -> Disposition {
        switch hw_signal_disposition(signal) {
        case 0: return .defaultAction
        case 1: return .ignored
        case 2: return .handler
        default: return .unknown
        }
    }

    /// For the differential tests: whether the blocked-thread walk may use function prologues.
    static func useProloguesForBlockedThreads(_ enabled: Bool) {
        hw_blocked_use_prologue(enabled ? 1 : 0)
    }

    /// Unwinds a thread blocked in a system call from its user stack pointer and program counter.
    static func captureBlocked(stackPointer: UInt, programCounter: UInt, stackLow: UInt, stackHigh: UInt, maxFrames: Int)
        -> (frames: [UInt], flags: UnwindFlags, asyncCallers: AsyncCallers?)
    {
        var frames = [UInt](repeating: 0, count: min(maxFrames, Self.maxFrames))
        var flags: Int32 = 0
        var chain = hw_async_chain()
        let count = frames.withUnsafeMutableBufferPointer { buffer in
            let count = hw_unwind_blocked_thread(
                stackPointer, programCounter, stackLow, stackHigh, buffer.baseAddress, Int32(buffer.count), &flags)
            _ = hw_async_chain_read(buffer.baseAddress, count, stackPointer, stackHigh, &chain)
            return count
        }
        return (Array(frames.prefix(Int(max(0, count)))), UnwindFlags(rawValue: flags), asyncCallers(chain))
    }
}
