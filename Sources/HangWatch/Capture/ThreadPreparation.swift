#if canImport(Glibc)
import Glibc
#endif

/// How a thread that never ran the attach step is prepared for captures (`ThreadPreparer` does
/// it): the decisions, pure, tested as tables.
///
/// Such a thread is a libdispatch worker (the queue's work moved to a worker no ping ran on; a
/// cooperative pool thread no probe reached) or any thread the monitor meets on its way (the
/// holder of a lock the hung thread waits for). It is asked to prepare itself by a signal it lets
/// through: the capture signal when its mask lets that through; else, for a libdispatch worker,
/// whose mask (`libdispatchWorkerMask`) blocks every signal but those libdispatch leaves open,
/// `SIGPROF`, which it leaves open for profilers and which HangWatch then handles (only where no
/// handler of the service's had it). A mask of any other shape that blocks the capture signal is
/// the service's own choice, and is kept: no signal is sent.
enum ThreadPreparation {
    /// The signals libdispatch leaves open on its workers (`_dispatch_sigmask`): every other one
    /// they block from their start.
    static let openOnLibdispatchWorkers: [Int32] = [SIGILL, SIGTRAP, SIGFPE, SIGBUS, SIGSEGV, SIGSYS, SIGPIPE, SIGPROF]

    /// Whether `blocked` (`SigBlk`: bit n-1 for signal n) is the mask libdispatch gives its workers:
    /// every signal blocked but the ones it leaves open, `SIGKILL` and `SIGSTOP` (never blockable),
    /// and glibc's two internal real-time signals (32 and 33, which glibc keeps out of any set).
    static func isLibdispatchWorkerMask(_ blocked: UInt64) -> Bool {
        var expected = UInt64.max
        for signal in openOnLibdispatchWorkers + [SIGKILL, SIGSTOP, 32, 33] { expected &= ~bit(signal) }
        let glibcInternal = bit(32) | bit(33)
        return blocked & ~glibcInternal == expected
    }

    /// The signal that asks a thread whose mask is `blocked` to prepare itself: the capture signal
    /// when the mask lets it through; else `profiling` (`SIGPROF`, when its handler is HangWatch's),
    /// for a libdispatch worker whose mask lets it through; nil: none may be sent.
    static func signal(blocked: UInt64?, capture: Int32, profiling: Int32?) -> Int32? {
        guard let blocked else { return nil }
        if blocked & bit(capture) == 0 { return capture }
        guard let profiling, blocked & bit(profiling) == 0, isLibdispatchWorkerMask(blocked) else { return nil }
        return profiling
    }

    /// The bounds of a prepared thread's stack from where it said its stack is: the stack mapping
    /// that holds its stack pointer, up to its thread pointer when that lies in the same mapping
    /// above it (glibc puts a thread's descriptor and static TLS at the top of its stack's mapping;
    /// an adjacent mapping the kernel merged with it stays out), else to the mapping's end (the
    /// main thread's `[stack]`). Nil when no stack mapping holds the stack pointer.
    static func bounds(stackPointer: UInt, threadPointer: UInt, mappings: [StackMapping]) -> (low: UInt, high: UInt)? {
        guard let mapping = mappings.first(where: { $0.contains(stackPointer) }) else { return nil }
        if mapping.contains(threadPointer), threadPointer > stackPointer { return (mapping.start, threadPointer) }
        return (mapping.start, mapping.end)
    }

    private static func bit(_ signal: Int32) -> UInt64 {
        signal >= 1 && signal <= 64 ? 1 << UInt64(signal - 1) : 0
    }
}
