import CHangWatchCapture
import Synchronization
@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// The one Swift file that talks to the C capture target. It converts between C structs and
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
        _ = jobRunAddress
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

    enum PublishResult: Equatable {
        case published
        /// An unwind was in flight; try again later.
        case busy
        /// Published, but only the first segments fitted the table.
        case tooLarge
    }

    /// Hands the unwinder its table of executable segments and readable ranges.
    static func publish(_ map: ImageMap) -> PublishResult {
        publishConcurrencyRuntime(map)
        let segments = map.images.flatMap(\.unwindSegments).sorted { $0.range.lowerBound < $1.range.lowerBound }
            .map {
                hw_unwind_segment(
                    start: $0.range.lowerBound, end: $0.range.upperBound, gp: $0.globalPointer,
                    eh_frame_hdr: $0.ehFrameHeader, table_data: $0.tableData, table_words: $0.tableWords)
            }
        let ranges = map.images.flatMap(\.segments).sorted { $0.lowerBound < $1.lowerBound }
            .map { hw_address_range(start: $0.lowerBound, end: $0.upperBound) }
        let fits = segments.count <= Int(HW_MAX_SEGMENTS) && ranges.count <= Int(HW_MAX_RANGES)
        let result = Array(segments.prefix(Int(HW_MAX_SEGMENTS))).withUnsafeBufferPointer { segmentBuffer in
            Array(ranges.prefix(Int(HW_MAX_RANGES))).withUnsafeBufferPointer { rangeBuffer in
                hw_images_publish(segmentBuffer.baseAddress, segmentBuffer.count, rangeBuffer.baseAddress, rangeBuffer.count)
            }
        }
        switch result {
        case 0: return fits ? .published : .tooLarge
        default: return .busy
        }
    }

    struct SignalCapture: Sendable {
        var frames: [UInt]
        var flags: UnwindFlags
        var pauseNanoseconds: Int64
        var asyncCallers: AsyncCallers?
        /// The signal arrived in a system call and cut it short: the call returns EINTR.
        var cutCallShort: Bool
    }

    /// Tells the capture code where the Swift concurrency runtime's code is (the executable segment
    /// holding `swift_job_run`, whose job loop calls async functions); without it no async callers
    /// are read.
    static func publishConcurrencyRuntime(_ map: ImageMap) {
        guard let address = jobRunAddress else {
            hw_async_runtime_set(0, 0)
            return
        }
        let segment = map.images.flatMap(\.unwindSegments).first { $0.range.contains(address) }
        hw_async_runtime_set(segment?.range.lowerBound ?? 0, segment?.range.upperBound ?? 0)
    }

    /// `swift_job_run`, looked up once when the capture handler is installed: `dlsym` takes the
    /// loader's lock, which a thread hung inside `dlopen` holds, so it is never called during a hang.
    private static let jobRunAddress: UInt? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_job_run").map {
        UInt(bitPattern: $0)
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

// MARK: - The loop-busy histogram and the heartbeat page (layouts of the C header)

/// The loop-busy histogram the loop's thread keeps (each bucket written by that thread alone) and
/// the watchdog copies into the heartbeat page at each tick. Its layout is the C header's.
struct UnsafeLoopHistogram: @unchecked Sendable {
    fileprivate let storage: UnsafeMutablePointer<hw_loop_histogram>

    static func allocate() -> UnsafeLoopHistogram {
        let storage = UnsafeMutablePointer<hw_loop_histogram>.allocate(capacity: 1)
        storage.initialize(to: hw_loop_histogram())
        return UnsafeLoopHistogram(storage: storage)
    }

    func deallocate() {
        storage.deallocate()
    }

    /// Sets every count to zero (the caller's own histogram: no loop writes it).
    func reset() {
        storage.pointee = hw_loop_histogram()
    }

    /// Adds `other`'s counts to this one (the caller's own), as the watchdog reads them.
    func accumulate(_ other: UnsafeLoopHistogram) {
        hw_loop_histogram_accumulate(storage, other.storage)
    }

    /// One iteration that was busy for `nanoseconds`. The loop's thread only.
    @inline(__always)
    func add(busyNanoseconds nanoseconds: UInt64) {
        hw_loop_histogram_add(storage, nanoseconds)
    }

    /// Upper bounds of the buckets but the last, in nanoseconds (the C header's table).
    static var bucketBounds: [UInt64] {
        withUnsafeBytes(of: hw_loop_bounds_ns) { Array($0.bindMemory(to: UInt64.self)) }
    }
}

extension UnsafeCaptureBridge {
    /// `CLOCK_MONOTONIC` in nanoseconds, through the vDSO (no system call).
    @inline(__always)
    static func monotonicNanoseconds() -> UInt64 {
        hw_monotonic_ns()
    }
}

/// The monitor's heartbeat page, in a shared file mapping the caller made of `size` bytes. One
/// writer (the watchdog) updates it with plain stores between two sequence increments; the layout
/// is the C header's, which `MonitorHeartbeat` in HangWatchReport reads (a test checks both agree).
final class UnsafeHeartbeatPage: @unchecked Sendable {
    static let size = Int(HW_HEARTBEAT_SIZE)
    private let page: UnsafeMutablePointer<hw_heartbeat>

    /// Takes over `mapping` (unmapped when this page goes) and writes its header.
    init(
        mapping: UnsafeMutableRawPointer, pid: UInt64, startTimeTicks: UInt64, intervalMilliseconds: UInt64,
        thresholdMicroseconds: UInt64, histogram: UnsafeLoopHistogram?
    ) {
        page = mapping.bindMemory(to: hw_heartbeat.self, capacity: 1)
        hw_heartbeat_init(page, pid, startTimeTicks, intervalMilliseconds, thresholdMicroseconds, histogram.map { UnsafePointer($0.storage) })
    }

    deinit {
        munmap(page, Self.size)
    }

    func tick(
        state: UInt64, activityWord: UInt64, hangsDetected: UInt64, hangsSuppressed: UInt64, callsCutShort: UInt64,
        thresholdMicroseconds: UInt64, histogram: UnsafeLoopHistogram?
    ) {
        hw_heartbeat_tick(
            page, state, activityWord, hangsDetected, hangsSuppressed, callsCutShort, thresholdMicroseconds,
            histogram.map { UnsafePointer($0.storage) })
    }

    /// Publishes the signal a thread dump is asked for with (`hangwatch dump`; 0: none).
    func captureSignal(_ signal: Int32) {
        hw_heartbeat_capture_signal(page, UInt64(max(0, signal)))
    }

    /// Publishes that the Swift runtime's task layout is not recognised (`SwiftTaskLayout`).
    func taskLayoutUnrecognised(_ unrecognised: Bool) {
        hw_heartbeat_flags(page, unrecognised ? UInt64(HW_HEARTBEAT_FLAG_TASK_LAYOUT_UNRECOGNISED) : 0)
    }

    /// Publishes the service's version (`ServiceVersion`; empty: none).
    func serviceVersion(_ version: String) {
        let bytes = Array(version.utf8.prefix(64))
        bytes.withUnsafeBufferPointer { hw_heartbeat_service_version(page, $0.baseAddress, $0.count) }
    }

    /// Publishes the pool probe's start delays (nil: this monitor does not run the pool watch).
    func pool(counts: [UInt64]?, totalNanoseconds: UInt64, starvations: UInt64) {
        guard let counts, counts.count == Int(HW_LOOP_BUCKETS) else {
            hw_heartbeat_pool(page, nil, 0)
            return
        }
        var histogram = hw_loop_histogram()
        histogram.total_ns = totalNanoseconds
        withUnsafeMutableBytes(of: &histogram.counts) { raw in
            for (index, count) in counts.enumerated() { raw.storeBytes(of: count, toByteOffset: index * 8, as: UInt64.self) }
        }
        hw_heartbeat_pool(page, &histogram, starvations)
    }

    /// Byte offsets of the page's fields, by the names `MonitorHeartbeat` uses.
    static var layout: [String: Int] {
        [
            "magic": MemoryLayout<hw_heartbeat>.offset(of: \.magic)!,
            "sequence": MemoryLayout<hw_heartbeat>.offset(of: \.sequence)!,
            "pid": MemoryLayout<hw_heartbeat>.offset(of: \.pid)!,
            "startTimeTicks": MemoryLayout<hw_heartbeat>.offset(of: \.start_time_ticks)!,
            "startedUnixMilliseconds": MemoryLayout<hw_heartbeat>.offset(of: \.started_unix_ms)!,
            "tickMonotonicNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.tick_monotonic_ns)!,
            "tickUnixMilliseconds": MemoryLayout<hw_heartbeat>.offset(of: \.tick_unix_ms)!,
            "intervalMilliseconds": MemoryLayout<hw_heartbeat>.offset(of: \.interval_ms)!,
            "state": MemoryLayout<hw_heartbeat>.offset(of: \.state)!,
            "activityWord": MemoryLayout<hw_heartbeat>.offset(of: \.activity_word)!,
            "hangsDetected": MemoryLayout<hw_heartbeat>.offset(of: \.hangs_detected)!,
            "thresholdMicroseconds": MemoryLayout<hw_heartbeat>.offset(of: \.threshold_us)!,
            "loopBuckets": MemoryLayout<hw_heartbeat>.offset(of: \.loop_buckets)!,
            "loopBusyTotalNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.loop_busy_total_ns)!,
            "loopCounts": MemoryLayout<hw_heartbeat>.offset(of: \.loop_counts)!,
            "hangsSuppressed": MemoryLayout<hw_heartbeat>.offset(of: \.hangs_suppressed)!,
            "captureSignal": MemoryLayout<hw_heartbeat>.offset(of: \.capture_signal)!,
            "watchdogTID": MemoryLayout<hw_heartbeat>.offset(of: \.watchdog_tid)!,
            "flags": MemoryLayout<hw_heartbeat>.offset(of: \.flags)!,
            "callsCutShort": MemoryLayout<hw_heartbeat>.offset(of: \.calls_cut_short)!,
            "poolBuckets": MemoryLayout<hw_heartbeat>.offset(of: \.pool_buckets)!,
            "poolDelayTotalNanoseconds": MemoryLayout<hw_heartbeat>.offset(of: \.pool_delay_total_ns)!,
            "poolCounts": MemoryLayout<hw_heartbeat>.offset(of: \.pool_counts)!,
            "poolStarvations": MemoryLayout<hw_heartbeat>.offset(of: \.pool_starvations)!,
            "serviceVersion": MemoryLayout<hw_heartbeat>.offset(of: \.service_version)!,
        ]
    }

    /// The page's magic number, as the C header defines it.
    static var magic: UInt64 { HW_HEARTBEAT_MAGIC }
}

extension UnsafeCaptureBridge {
    /// The runtime's global-enqueue hooks that wake a resting pool watch (`hw_pool_wake.c`; not
    /// signal-handler code). `UnsafeRuntimeEnqueueHooks` is their one user.
    enum PoolHooks {
        /// Installs the hooks once per process; false when this runtime has none.
        static func install(wake: @convention(c) () -> Void) -> Bool { hw_pool_hooks_install(wake) == 0 }
        /// All three hooks are still ours.
        static var areCurrent: Bool { hw_pool_hooks_current() == 1 }
        static func arm() { hw_pool_arm() }
        /// When the enqueue that woke happened, monotonic nanoseconds (0: none).
        static func disarm() -> UInt64 { hw_pool_disarm() }
        static func ownEnqueues(_ own: Bool) { hw_pool_own_enqueues(own ? 1 : 0) }
        /// The next delayed job's due time after `nowNanoseconds`: 0 none, -1 unknown.
        static func nextDelayed(afterNanoseconds now: UInt64) -> Int64 { hw_pool_next_delayed(now) }
    }
}

extension UnsafeCaptureBridge {
    /// The watchdog's wake-up: a POSIX semaphore a signal handler may post (`WatchdogWake`).
    enum Wake {
        static var size: Int { hw_wake_size() }
        static func initialize(_ semaphore: UnsafeMutableRawPointer) -> Bool { hw_wake_init(semaphore) == 0 }
        static func destroy(_ semaphore: UnsafeMutableRawPointer) { hw_wake_destroy(semaphore) }
        static func post(_ semaphore: UnsafeMutableRawPointer) { hw_wake_post(semaphore) }
        static func wait(_ semaphore: UnsafeMutableRawPointer) { _ = hw_wake_wait(semaphore) }
        /// True when posted, false when `monotonicNanoseconds` (`CLOCK_MONOTONIC`) passed first.
        static func wait(_ semaphore: UnsafeMutableRawPointer, untilNanoseconds monotonicNanoseconds: UInt64) -> Bool {
            hw_wake_wait_until(semaphore, monotonicNanoseconds) == 1
        }
        static func tryWait(_ semaphore: UnsafeMutableRawPointer) -> Bool { hw_wake_try(semaphore) != 0 }
    }

    /// Dump requests (`hangwatch dump PID`): the capture signal from another process, tagged.
    enum DumpRequests {
        /// `semaphore` is posted when one arrives (one registration at a time: the latest).
        static func register(_ semaphore: UnsafeMutableRawPointer) { hw_dump_register(semaphore) }
        static func unregister(_ semaphore: UnsafeMutableRawPointer) { hw_dump_unregister(semaphore) }
        /// Every pending request's nonce, in the order of their slots; their slots freed.
        static func takeAll() -> [UInt64] {
            var nonces: [UInt64] = []
            while nonces.count < 64 {
                let nonce = hw_dump_take()
                if nonce == 0 { break }
                nonces.append(nonce)
            }
            return nonces
        }
    }
}

extension UnsafeCaptureBridge {
    /// The calling thread's CPU affinity (which CPUs it may run on).
    enum Affinity {
        static let bytes = 128  // 1024 CPUs, glibc's cpu_set_t

        static func current() -> [Int32]? {
            var mask = [UInt8](repeating: 0, count: bytes)
            guard hw_get_affinity(&mask, bytes) == 0 else { return nil }
            return (0..<Int32(bytes * 8)).filter { mask[Int($0 / 8)] & (1 << UInt8($0 % 8)) != 0 }
        }

        static func set(_ cpus: [Int32]) -> Bool {
            var mask = [UInt8](repeating: 0, count: bytes)
            for cpu in cpus where cpu >= 0 && Int(cpu / 8) < bytes { mask[Int(cpu / 8)] |= 1 << UInt8(cpu % 8) }
            return hw_set_affinity(mask, bytes) == 0
        }
    }
}
