import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a monitored loop last did, shared between the loop's thread (one writer, on the hot path)
/// and the watchdog thread (the reader).
///
/// The loop's thread records every observed activity. It stores one word, `time << 8 | activity`,
/// where time is `CLOCK_MONOTONIC_COARSE` in units of 1024 ns (the cheapest monotonic clock, ~3 ns
/// through the vDSO; its resolution is one scheduler tick, 4 ms here). It signals the watchdog only
/// on a transition from idle to busy, and only when the watchdog has parked itself because the loop
/// was idle: a loop spinning a million times a second costs the watchdog nothing, and a sleeping
/// loop lets it sleep too.
///
/// Parking is a Dekker handshake: the watchdog sets `parked` then re-reads the word; the loop
/// stores the word then reads `parked`, both sequentially consistent, so at least one of them sees
/// the other and a wake-up is never lost. Only the idle-to-busy store pays for that ordering.
///
/// The state the loop's thread touches lives in `UnsafeLatchStorage`, reached from the observer
/// callback through a raw pointer: no class, no reference counting, no stack buffer (so no stack
/// protector) on the hot path.
final class ActivityLatch: @unchecked Sendable {
    /// Owned by this latch; CoreFoundation's observers reach it through the pointer.
    let storage: UnsafeMutablePointer<UnsafeLatchStorage>

    /// Posted by the loop's thread when it leaves idle while the watchdog is parked, and by control
    /// calls (stop, threshold changes, resume) that need the watchdog to look again.
    var wake: WatchdogWake { storage.pointee.wake }

    /// `wake`: the watchdog's semaphore (latches of one watchdog share it); by default its own.
    /// `leadUpBuckets`: buckets of the flight recorder (`UnsafeLeadUpRecorder`) to keep; 0: none.
    /// `leadUpWrittenBySource`: the source writes the recorder from its own edges (an event loop's
    /// `EventLoopLeadUp`), not the latch's records (which such a source makes only for a hang).
    init(
        busyActivities: Set<HangMonitor.Activity>, loopHistogram: Bool = false, leadUpBuckets: Int = 0,
        leadUpWrittenBySource: Bool = false, wake: WatchdogWake = WatchdogWake()
    ) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: UnsafeLatchStorage(idleMask: ~HangMonitor.Activity.mask(busyActivities), wake: wake))
        let recorder = leadUpBuckets > 0 ? UnsafeLeadUpRecorder.allocate(buckets: leadUpBuckets) : nil
        sourceLeadUp = leadUpWrittenBySource ? recorder : nil
        if !leadUpWrittenBySource { storage.pointee.leadUp = recorder }
        storage.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
        if loopHistogram {
            storage.pointee.loopHistogram = UnsafeLoopHistogram.allocate()
        }
    }

    /// The flight recorder, if kept (the watchdog reads it when a hang begins).
    var leadUp: UnsafeLeadUpRecorder? { storage.pointee.leadUp ?? sourceLeadUp }

    /// The flight recorder its source writes (`leadUpWrittenBySource`); nil otherwise.
    let sourceLeadUp: UnsafeLeadUpRecorder?

    /// The loop-busy histogram, if kept (the watchdog copies it into the heartbeat).
    var loopHistogram: UnsafeLoopHistogram? { storage.pointee.loopHistogram }

    deinit {
        storage.pointee.loopHistogram?.deallocate()
        storage.pointee.leadUp?.deallocate()
        sourceLeadUp?.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Records `activity` now (tests and the loop's thread; the observer calls the storage directly).
    func record(_ activity: UInt8) {
        UnsafeLatchStorage.record(activity, in: storage)
    }

    /// Records a busy `activity` that began earlier, at `coarseNanoseconds` of
    /// `CLOCK_MONOTONIC_COARSE` (a pinged source declares a stall only once its ping is overdue),
    /// and wakes a parked watchdog.
    func recordBusy(_ activity: UInt8, sinceCoarseNanoseconds coarseNanoseconds: UInt64) {
        storage.pointee.word.store((coarseNanoseconds >> 10) << 8 | UInt64(activity), ordering: .sequentiallyConsistent)
        if storage.pointee.parked.load(ordering: .sequentiallyConsistent),
            storage.pointee.parked.exchange(false, ordering: .sequentiallyConsistent)
        {
            storage.pointee.wake.signal()
        }
    }

    /// The latest activity and when it happened.
    func snapshot() -> ActivitySnapshot {
        ActivitySnapshot(word: storage.pointee.word.load(ordering: .acquiring))
    }

    /// Announce that the watchdog is about to block until the loop becomes busy. Returns the
    /// snapshot read after announcing: if it is no longer `expected`, do not block.
    func park() -> ActivitySnapshot {
        storage.pointee.parked.store(true, ordering: .sequentiallyConsistent)
        return ActivitySnapshot(word: storage.pointee.word.load(ordering: .sequentiallyConsistent))
    }

    /// Withdraw a park announcement (after waking or deciding not to block).
    func unpark() {
        storage.pointee.parked.store(false, ordering: .sequentiallyConsistent)
    }

    /// A busy stretch at least `microseconds` long that ends while no hang is recorded is kept for
    /// the watchdog (`takeLateStretch`): a hang it did not see while it lasted.
    func setLateStretchThreshold(microseconds: UInt64) {
        let units = (microseconds * 1000) >> 10
        if storage.pointee.lateThresholdUnits.load(ordering: .relaxed) != units {
            storage.pointee.lateThresholdUnits.store(units, ordering: .relaxed)
        }
    }

    /// The last busy stretch past the late-stretch threshold that ended while no hang was
    /// recorded, taken (nil: none since the last take): its start and end, microseconds of
    /// `CLOCK_MONOTONIC_COARSE`, the start resolved against `nowMicroseconds`.
    func takeLateStretch(nowMicroseconds: UInt64) -> (start: UInt64, end: UInt64, activity: UInt8)? {
        guard storage.pointee.lateStretch.load(ordering: .relaxed) != 0 else { return nil }
        let packed = storage.pointee.lateStretch.exchange(0, ordering: .acquiring)
        guard packed != 0 else { return nil }
        let nowUnits = Int64((nowMicroseconds * 1000) >> 10)
        // The start's low 32 bits, resolved to the instant nearest `now` (it may be a little after
        // the caller read `now`: the loop may publish meanwhile).
        let behind = Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: UInt64(nowUnits) &- (packed >> 32))))
        guard nowUnits - behind >= 0 else { return nil }
        let start = UInt64(nowUnits - behind)
        let end = start + (packed & 0xffff_ffff)
        return ((start << 10) / 1000, (end << 10) / 1000, storage.pointee.lateActivity.load(ordering: .relaxed))
    }

    /// While set, idle activities are timed too (the end of a hang is the loop's next activity).
    func setRecordingHang(_ recording: Bool) {
        storage.pointee.recordingHang.store(recording, ordering: .releasing)
    }

    /// The watchdog's one write: when it finds the loop not really busy (asleep in a mode that was
    /// not observed, or no longer running at all), it replaces the stale busy word with an idle one
    /// so that the loop's next activity counts as a wake-up edge. Does nothing if the loop has
    /// written since `snapshot`. The loop thread's plain store after its relaxed load can still race
    /// with this; `park()` re-reads the word after announcing, so the watchdog notices either way.
    func markIdle(ifUnchanged snapshot: ActivitySnapshot) {
        _ = storage.pointee.word.compareExchange(
            expected: snapshot.word, desired: snapshot.word & ~UInt64(0xff), ordering: .sequentiallyConsistent)
    }

    /// Records `activity` as the loop's thread would, at `nanoseconds` of `CLOCK_MONOTONIC` (the
    /// coarse clock's base) when given, else as `record(_:)`: a ping's answer that ends a declared
    /// hang (the event-loop and queue sources), timed on the fine clock (on the coarse one the end
    /// would be early by up to a tick, 4 ms).
    func record(_ activity: UInt8, atNanoseconds nanoseconds: UInt64?) {
        guard let nanoseconds else { return record(activity) }
        UnsafeLatchStorage.record(activity, in: storage) { nanoseconds >> 10 }
    }

    /// Records `activity` as the loop's thread would, at `microseconds` of a clock the caller keeps
    /// (tests that drive the watchdog with scripted time).
    func record(_ activity: UInt8, atMicroseconds microseconds: UInt64) {
        UnsafeLatchStorage.record(activity, in: storage) { (microseconds * 1000) >> 10 }
    }

    static func isIdle(_ activity: UInt8, idleMask: UInt8) -> Bool {
        UnsafeLatchStorage.isIdle(activity, idleMask: idleMask)
    }
}

/// The loop-thread side of an `ActivityLatch`, in memory the latch allocates.
struct UnsafeLatchStorage: ~Copyable {
    let word = Atomic<UInt64>(0)
    let parked = Atomic<Bool>(false)
    /// Set by the watchdog while it records a hang: only then does the time of an idle activity
    /// matter (it is when the hang ended), so only then is the clock read for one.
    let recordingHang = Atomic<Bool>(false)
    /// Activities after which the loop counts as idle (bit mask of `HangMonitor.Activity` raw values).
    let idleMask: UInt8
    let wake: WatchdogWake
    /// The owning `ActivityLatch`, for the observers' retain and release callbacks.
    var owner: UnsafeMutableRawPointer?
    /// The loop thread's buffer for `clock_gettime`.
    var now = timespec()
    /// The loop-busy histogram, when the monitor keeps one (`loopHistogram`); written only by the
    /// loop's thread, read by the watchdog for the heartbeat.
    var loopHistogram: UnsafeLoopHistogram?
    /// The flight recorder, when the monitor keeps one (a run loop's, `leadUpWindow`); written only
    /// by the loop's thread, read by the watchdog when a hang begins.
    var leadUp: UnsafeLeadUpRecorder?
    /// When the current busy stretch began (`CLOCK_MONOTONIC` ns; 0: idle). Loop thread only.
    var busySince: UInt64 = 0
    /// A busy stretch at least this long (1024 ns units; the watchdog sets it: the threshold plus
    /// the clock's resolution) that ends while no hang is recorded is kept in `lateStretch`.
    let lateThresholdUnits = Atomic<UInt64>(UInt64.max)
    /// The last such stretch, `start << 32 | duration` (1024 ns units; the start's low 32 bits):
    /// a hang the watchdog did not see while it lasted (kept off its CPU until it had ended). The
    /// watchdog takes it (`ActivityLatch.takeLateStretch`). 0: none.
    let lateStretch = Atomic<UInt64>(0)
    /// The busy activity that began it (written before `lateStretch`).
    let lateActivity = Atomic<UInt8>(0)

    init(idleMask: UInt8, wake: WatchdogWake) {
        self.idleMask = idleMask
        self.wake = wake
    }

    /// Called on the loop's thread for every observed activity. Must stay tiny.
    @inline(__always)
    static func record(_ activity: UInt8, in storage: UnsafeMutablePointer<UnsafeLatchStorage>) {
        record(activity, in: storage) {
            clock_gettime(CLOCK_MONOTONIC_COARSE, &storage.pointee.now)
            let now = storage.pointee.now
            return (UInt64(truncatingIfNeeded: now.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: now.tv_nsec)) >> 10
        }
    }

    /// The same, with the time (in 1024 ns units) from `clock`, read only when it is needed: for a
    /// busy activity, and for the idle one that ends a busy stretch (its end: the hang's, while one
    /// is recorded; else a stretch past the threshold the watchdog did not see is kept for it).
    @inline(__always)
    static func record(_ activity: UInt8, in storage: UnsafeMutablePointer<UnsafeLatchStorage>, clock: () -> UInt64) {
        let previousWord = storage.pointee.word.load(ordering: .relaxed)
        let idleMask = storage.pointee.idleMask
        let idle = isIdle(activity, idleMask: idleMask)
        let wasIdle = isIdle(UInt8(truncatingIfNeeded: previousWord), idleMask: idleMask)
        let value: UInt64
        if idle && wasIdle {
            // Idle to idle: the time is not needed.
            value = previousWord & ~0xff | UInt64(activity)
        } else {
            let now = clock()
            value = now << 8 | UInt64(activity)
            if let leadUp = storage.pointee.leadUp {
                // The clock was read anyway: the recorder costs a few stores, no clock read.
                let iteration = !idle && activity == HangMonitor.Activity.beforeSources.rawValue
                if wasIdle {
                    leadUp.beginStretch(at: now, iteration: iteration)
                } else {
                    leadUp.endPiece(from: previousWord >> 8, to: now, endsStretch: idle, iteration: iteration)
                }
            }
            if idle && !storage.pointee.recordingHang.load(ordering: .relaxed) {
                let start = previousWord >> 8
                let duration = now &- start
                if duration >= storage.pointee.lateThresholdUnits.load(ordering: .relaxed) && duration < 1 << 32 {
                    storage.pointee.lateActivity.store(UInt8(truncatingIfNeeded: previousWord), ordering: .relaxed)
                    storage.pointee.lateStretch.store((start & 0xffff_ffff) << 32 | duration, ordering: .releasing)
                }
            }
        }
        if let histogram = storage.pointee.loopHistogram, wasIdle != idle {
            let now = UnsafeClock.monotonicNanoseconds()
            if !idle {
                storage.pointee.busySince = now
            } else if storage.pointee.busySince != 0 {
                histogram.add(busyNanoseconds: now &- storage.pointee.busySince)
                storage.pointee.busySince = 0
            }
        }
        if wasIdle && !idle {
            storage.pointee.word.store(value, ordering: .sequentiallyConsistent)
            if storage.pointee.parked.load(ordering: .sequentiallyConsistent) {
                if storage.pointee.parked.exchange(false, ordering: .sequentiallyConsistent) {
                    storage.pointee.wake.signal()
                }
            }
        } else {
            storage.pointee.word.store(value, ordering: .releasing)
        }
    }

    @inline(__always)
    static func isIdle(_ activity: UInt8, idleMask: UInt8) -> Bool {
        activity == 0 || activity & idleMask != 0
    }
}

/// One reading of an `ActivityLatch`.
struct ActivitySnapshot: Equatable, Sendable {
    let word: UInt64

    var activity: UInt8 { UInt8(truncatingIfNeeded: word) }
    /// `CLOCK_MONOTONIC_COARSE` at the activity, in microseconds.
    var microseconds: UInt64 { ((word >> 8) << 10) / 1000 }

    init(word: UInt64) { self.word = word }

    init(activity: UInt8, microseconds: UInt64) {
        word = ((microseconds * 1000) >> 10) << 8 | UInt64(activity)
    }
}
