@_spi(Internal) import HangWatchReport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Prepares threads that never ran the attach step for captures, from the watchdog's thread
/// (`ThreadPreparation` decides how; `hw_prepare.c` is the handler's side), and remembers them.
///
/// One per process (`ThreadInspection`, `ProcessRuntime.threads`): a thread's alternate stack and
/// signal mask are the process's, whichever monitor's watchdog first met the thread. A prepared thread keeps the alternate stack it was
/// given until it exits; the stack is unmapped at a later preparation that finds it gone (never
/// before: a thread that answered late may have taken it).
final class ThreadPreparer: Sendable {
    /// A thread prepared (or asked to be): its stack bounds once it answered, and the alternate
    /// stack it was handed (base and length of the whole mapping, its guard page included).
    private struct Entry {
        var startTimeTicks: UInt64
        var bounds: (low: UInt, high: UInt)?
        var threadPointer: UInt?
        var alternateStack: (base: UInt, length: Int)?
    }

    private struct State {
        var threads: [Int32: Entry] = [:]
        /// `SIGPROF` once its handler is HangWatch's; nil: not tried yet; `.some(nil)`: not ours.
        var profiling: Int32?? = nil
    }
    private let state = Mutex(State())

    static let alternateStackSize = 64 << 10
    /// Threads remembered at most (the oldest are forgotten first; their stacks stay mapped).
    static let capacity = 4096

    /// `thread` with the bounds its preparation found, when it was prepared (the same thread: its
    /// start time checked).
    func prepared(_ thread: MonitoredThread) -> MonitoredThread? {
        state.withLock { state in
            guard let entry = state.threads[thread.tid], entry.startTimeTicks == thread.startTimeTicks,
                let bounds = entry.bounds
            else { return nil }
            var prepared = thread
            prepared.stackLow = bounds.low
            prepared.stackHigh = bounds.high
            prepared.preparedForSignals = true
            return prepared
        }
    }

    /// The thread pointer (`pthread_self()`) a prepared thread gave.
    func threadPointer(tid: Int32, startTimeTicks: UInt64) -> UInt? {
        state.withLock { state in
            guard let entry = state.threads[tid], entry.startTimeTicks == startTimeTicks else { return nil }
            return entry.threadPointer
        }
    }

    /// Why a thread could not be prepared.
    enum Failure: Error, Equatable {
        /// Its mask lets through no signal HangWatch may send it.
        case noSignalGetsThrough
        /// The guard did not hold right before the send: nothing was sent (look again).
        case sleptAtPreparation
        case capture(UnsafeCaptureBridge.SignalCaptureError)
        /// Its stack pointer is in no stack mapping.
        case stackNotFound
    }

    /// Asks `thread` (whose mask is `blocked`) to prepare itself, behind `captureGuard`, and returns
    /// it with its stack bounds. Call with captures serialized (the sampler's lock).
    func prepare(
        _ thread: MonitoredThread, blocked: UInt64?, captureSignal: Int32, guard captureGuard: UnsafeCaptureBridge.CaptureGuard?,
        timeoutNanoseconds: Int64
    ) -> Result<(thread: MonitoredThread, cutCallShort: Bool), Failure> {
        forgetThreadsGone()
        guard let signal = ThreadPreparation.signal(blocked: blocked, capture: captureSignal, profiling: profilingSignal()) else {
            return .failure(.noSignalGetsThrough)
        }
        let stack = Self.mapAlternateStack()
        let answer = UnsafeCaptureBridge.prepareBySignal(
            tid: thread.tid, guard: captureGuard, signal: signal, captureSignal: captureSignal,
            alternateStack: stack.map { UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: $0.base + UInt(Self.pageSize)), count: $0.length - Self.pageSize) },
            timeoutNanoseconds: timeoutNanoseconds)
        switch answer {
        case .failure(let error):
            if error == .timeout {
                // It may take the stack yet: kept mapped until the thread is gone.
                remember(thread, Entry(startTimeTicks: thread.startTimeTicks, alternateStack: stack))
            } else if let stack {
                munmap(UnsafeMutableRawPointer(bitPattern: stack.base), stack.length)
            }
            return .failure(error == .sleptAtCapture ? .sleptAtPreparation : .capture(error))
        case .success(let answered):
            var kept = stack
            if !answered.tookAlternateStack, let stack {
                munmap(UnsafeMutableRawPointer(bitPattern: stack.base), stack.length)
                kept = nil
            }
            let bounds = ThreadPreparation.bounds(
                stackPointer: answered.stackPointer, threadPointer: answered.threadPointer, mappings: StackMapping.readAll())
            remember(
                thread,
                Entry(startTimeTicks: thread.startTimeTicks, bounds: bounds, threadPointer: answered.threadPointer, alternateStack: kept))
            guard let bounds else { return .failure(.stackNotFound) }
            var prepared = thread
            prepared.stackLow = bounds.low
            prepared.stackHigh = bounds.high
            prepared.preparedForSignals = true
            return .success((prepared, answered.cutCallShort))
        }
    }

    /// `SIGPROF`, once HangWatch's handler has it: installed the first time it is needed when the
    /// service left it to the default action or ignored it (never over a handler of the service's),
    /// and given up once someone else's handler replaced ours.
    private func profilingSignal() -> Int32? {
        let decided = state.withLock { $0.profiling }
        if let decided {
            guard let signal = decided, UnsafeCaptureBridge.handlerIsCurrent(signal: signal) else { return nil }
            return signal
        }
        var signal: Int32?
        switch UnsafeCaptureBridge.disposition(of: SIGPROF) {
        case .defaultAction, .ignored: signal = (try? UnsafeCaptureBridge.install(signal: SIGPROF)) != nil ? SIGPROF : nil
        case .handler: signal = UnsafeCaptureBridge.handlerIsCurrent(signal: SIGPROF) ? SIGPROF : nil
        case .unknown: signal = nil
        }
        state.withLock { $0.profiling = .some(signal) }
        return signal
    }

    private func remember(_ thread: MonitoredThread, _ entry: Entry) {
        state.withLock { state in
            if let old = state.threads[thread.tid], old.startTimeTicks != entry.startTimeTicks, let stack = old.alternateStack {
                // The id's earlier thread is gone (a new one has it): its stack is free.
                munmap(UnsafeMutableRawPointer(bitPattern: stack.base), stack.length)
            }
            var entry = entry
            if let old = state.threads[thread.tid], old.startTimeTicks == entry.startTimeTicks, entry.alternateStack == nil {
                entry.alternateStack = old.alternateStack
            }
            state.threads[thread.tid] = entry
            if state.threads.count > Self.capacity, let oldest = state.threads.keys.min() { state.threads[oldest] = nil }
        }
    }

    /// Forgets the threads that exited, and unmaps the alternate stacks they were given.
    private func forgetThreadsGone() {
        let known = state.withLock { $0.threads.map { ($0.key, $0.value.startTimeTicks) } }
        let gone = known.filter { tid, start in ProcTask(tid: tid).stat()?.startTimeTicks != start }
        guard !gone.isEmpty else { return }
        state.withLock { state in
            for (tid, start) in gone where state.threads[tid]?.startTimeTicks == start {
                if let stack = state.threads[tid]?.alternateStack { munmap(UnsafeMutableRawPointer(bitPattern: stack.base), stack.length) }
                state.threads[tid] = nil
            }
        }
    }

    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// An alternate stack with one guard page below it (an overflow faults instead of writing into
    /// another mapping); nil when it cannot be mapped (the thread is then asked without one).
    private static func mapAlternateStack() -> (base: UInt, length: Int)? {
        let length = alternateStackSize + pageSize
        guard let memory = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0),
            memory != MAP_FAILED
        else { return nil }
        guard mprotect(memory, pageSize, PROT_NONE) == 0 else {
            munmap(memory, length)
            return nil
        }
        return (UInt(bitPattern: memory), length)
    }
}
