import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// When each `Task.sleep` ends, read from libdispatch. On Swift 6.3.1 a sleep makes a wake task
/// (not started: its run function is the future adapter) whose closure box holds the sleep's
/// state word, whose value is the sleeping task; the runtime hands the wake task to
/// `dispatch_after_f`, which keeps it in a continuation {…, callback @0x20, the wake task @0x28,
/// its timer source @0x30}, whose source's timer references (@0x58) point back at the continuation
/// (@0x28) and hold the target time (@0x50) and the interval (@0x60, all ones for an `after`).
/// These are the offsets of the toolchain's swift-corelibs-libdispatch, checked on this build:
/// a hit counts only when the back pointer and the interval agree, so another build's layout says
/// "time left unknown", never a wrong time.
///
/// The callback word is learnt once (from one wake task: a scan for its address), then each dump
/// finds every pending timer with one scan for that word followed by a wake task's address (the
/// word alone is in every continuation libdispatch ever ran a job with, freed ones included). Unsafe: raw addresses, process-wide
/// state beside libdispatch's.
enum UnsafeDispatchTimers {
    /// libdispatch's callback word in a timer's continuation (0: not learnt).
    private static let callback = Atomic<UInt>(0)

    /// Where the wake task's closure keeps the sleeping task (Task.sleep on 6.3.1): the box is
    /// this far before the wake task's first context, the state word's address this far into it.
    static let boxBeforeContext: UInt = 0x10
    static let stateWordInBox: UInt = 0x10

    /// The sleeping task a wake task (not started, with context `context`) wakes; nil when it is
    /// not a sleep's wake task.
    static func sleeper(ofWakeContext context: UInt) -> UInt? {
        guard context > boxBeforeContext, let box = UnsafeProcessMemory.copy(UInt.self, at: context - boxBeforeContext), box != 0, box & 7 == 0,
            let stateWord = UnsafeProcessMemory.copy(UInt.self, at: box + stateWordInBox), stateWord != 0, stateWord & 7 == 0,
            let value = UnsafeProcessMemory.copy(UInt.self, at: stateWord)
        else { return nil }
        let task = value & ~3
        return task == 0 ? nil : task
    }

    /// When the timers of `wakeTasks` fire, by wake task: CLOCK_BOOTTIME-based target and leeway,
    /// nanoseconds; absent when not found. Scans at most until `deadlineNanoseconds`.
    static func dues(wakeTasks: [UInt], mappings: [TaskHeapMapping], deadlineNanoseconds: UInt64) -> [UInt: UInt64] {
        guard let first = wakeTasks.first else { return [:] }
        var function = callback.load(ordering: .acquiring)
        if function == 0 {
            let references = UnsafeTaskHeapScan(needles: [first], everyWord: true, maxHits: 4096, deadlineNanoseconds: deadlineNanoseconds).scan(mappings)
            for hit in references.hits[0] where hit >= 0x28 {
                let continuation = hit - 0x28
                guard let word = UnsafeProcessMemory.copy(UInt.self, at: continuation + 0x20), word != 0, check(continuation) != nil else { continue }
                function = word
                callback.store(word, ordering: .releasing)
                break
            }
        }
        guard function != 0 else { return [:] }
        let wanted = Set(wakeTasks)
        var found: [UInt: UInt64] = [:]
        let hits = UnsafeTaskHeapScan(
            needles: [function], everyWord: true, followedBy: wanted, maxHits: 4 * wanted.count + 64, deadlineNanoseconds: deadlineNanoseconds
        ).scan(mappings)
        for hit in hits.hits[0] where hit >= 0x20 {
            if let (job, target) = check(hit - 0x20), wanted.contains(job) { found[job] = target }
        }
        return found
    }

    /// The wake task and target of the `after` continuation at `continuation`, when its timer
    /// points back at it and is a one-shot.
    private static func check(_ continuation: UInt) -> (job: UInt, target: UInt64)? {
        guard let job = UnsafeProcessMemory.copy(UInt.self, at: continuation + 0x28),
            let source = UnsafeProcessMemory.copy(UInt.self, at: continuation + 0x30), source != 0, source & 7 == 0,
            let references = UnsafeProcessMemory.copy(UInt.self, at: source + 0x58), references != 0, references & 7 == 0,
            let back = UnsafeProcessMemory.copy(UInt.self, at: references + 0x28), back == continuation,
            let target = UnsafeProcessMemory.copy(UInt64.self, at: references + 0x50),
            let deadline = UnsafeProcessMemory.copy(UInt64.self, at: references + 0x58),
            let interval = UnsafeProcessMemory.copy(UInt64.self, at: references + 0x60), interval == .max, deadline >= target
        else { return nil }
        return (job, target)
    }

    /// CLOCK_BOOTTIME and CLOCK_MONOTONIC now, nanoseconds: they differ by the time the machine
    /// was suspended, when a sleep's clock (continuous or suspending) matters.
    static func clocks() -> (boot: UInt64, monotonic: UInt64) {
        var boot = timespec()
        var monotonic = timespec()
        clock_gettime(CLOCK_BOOTTIME, &boot)
        clock_gettime(CLOCK_MONOTONIC, &monotonic)
        return (UInt64(boot.tv_sec) * 1_000_000_000 + UInt64(boot.tv_nsec), UInt64(monotonic.tv_sec) * 1_000_000_000 + UInt64(monotonic.tv_nsec))
    }
}
