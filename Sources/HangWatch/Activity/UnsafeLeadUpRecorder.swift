import Synchronization

/// The flight recorder of a run loop: a fixed ring of buckets of `bucketUnits` (100 ms) covering
/// the last seconds, written by the loop's thread from the latch's own edges, read by the watchdog
/// when a hang begins (`LeadUpRecord`). Memory the latch allocates once, `3 * buckets + 5` words;
/// nothing allocates, no clock is read and no thread is woken to write it.
///
/// The latch reads the coarse clock at every busy activity and at the idle one that ends a busy
/// stretch; each such read ends a busy *piece* (from the previous busy activity to now, the span
/// the hang threshold is compared with). The piece is added to the bucket(s) it overlaps (split at
/// their boundaries), the longest piece per bucket kept; a `beforeSources` begins an iteration,
/// and the idle activity that ends a stretch is counted in the bucket it falls in.
///
/// Each bucket is three words: its epoch (the bucket's number, time / `bucketUnits`), busy units
/// and the longest piece (32 bits each), stretches ended and iterations begun (32 bits each). The
/// loop's thread is the only writer (relaxed stores); a bucket is reset by storing an invalid epoch,
/// zeroing it, then storing its new epoch, so a reader that reads the epoch, the counts and the
/// epoch again and finds the epoch it expected both times has a bucket of that epoch (counts at
/// most one event behind), and otherwise reads it as idle.
///
/// Beside the ring, the current busy stretch (its start, iterations begun and longest piece so
/// far): what the watchdog needs to say what led into a hang within the same stretch; and the lag
/// histogram, every piece counted by its length since the recorder began (the heartbeat publishes
/// it: `hangwatch_loop_lag_seconds`). Its lengths are the coarse clock's: a piece reads as a
/// whole number of its ticks (4 ms), so one shorter than a tick reads 0 or one tick.
struct UnsafeLeadUpRecorder: @unchecked Sendable {
    /// 100 ms in the latch's units of 1024 ns (99.99974 ms).
    static let bucketUnits: UInt64 = 97_656
    /// The epoch of a bucket being reset (never a real one).
    static let invalidEpoch = UInt64.max

    /// `3 * buckets` words of ring, then the stretch's start, its iterations and its longest piece,
    /// then the bucket the loop last wrote: its epoch and its slot (the loop's own cache: most
    /// pieces fall in it, so no division is needed to find their bucket).
    let words: UnsafeMutablePointer<Atomic<UInt64>>
    let buckets: Int
    /// Every busy piece by its length (the loop's thread writes it; the heartbeat copies it).
    let lag: UnsafeLoopHistogram

    /// A recorder of `buckets` buckets (at least 1), every bucket idle.
    static func allocate(buckets: Int) -> UnsafeLeadUpRecorder {
        precondition(buckets > 0)
        let count = 3 * buckets + 5
        let words = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: count)
        for index in 0..<count {
            let epoch = (index < 3 * buckets && index % 3 == 0) || index == 3 * buckets + 3
            (words + index).initialize(to: Atomic(epoch ? invalidEpoch : 0))
        }
        return UnsafeLeadUpRecorder(words: words, buckets: buckets, lag: UnsafeLoopHistogram.allocate())
    }

    func deallocate() {
        words.deinitialize(count: 3 * buckets + 5)
        words.deallocate()
        lag.deallocate()
    }

    /// Bytes of memory a recorder of `buckets` buckets holds (its ring and its lag histogram).
    static func bytes(buckets: Int) -> Int { (3 * buckets + 5) * MemoryLayout<UInt64>.stride + UnsafeLoopHistogram.bytes }

    private var stretchStart: UnsafeMutablePointer<Atomic<UInt64>> { words + 3 * buckets }
    private var stretchIterations: UnsafeMutablePointer<Atomic<UInt64>> { words + 3 * buckets + 1 }
    private var stretchLongest: UnsafeMutablePointer<Atomic<UInt64>> { words + 3 * buckets + 2 }
    private var cachedEpoch: UnsafeMutablePointer<Atomic<UInt64>> { words + 3 * buckets + 3 }
    private var cachedSlot: UnsafeMutablePointer<Atomic<UInt64>> { words + 3 * buckets + 4 }

    // MARK: The loop's thread

    /// The loop left idle at `now` (units): a busy stretch begins. `iteration`: the activity
    /// begins an iteration (`beforeSources`).
    @inline(__always)
    func beginStretch(at now: UInt64, iteration: Bool) {
        stretchStart.pointee.store(now, ordering: .relaxed)
        stretchIterations.pointee.store(iteration ? 1 : 0, ordering: .relaxed)
        stretchLongest.pointee.store(0, ordering: .relaxed)
        if iteration, let slot = slot(at: now) { addCounts(slot, stretches: 0, iterations: 1) }
    }

    /// A busy piece from `start` to `end` (units) ended: by a busy activity (`endsStretch` false;
    /// `iteration`: it begins an iteration) or by the idle one that ends the stretch.
    @inline(__always)
    func endPiece(from start: UInt64, to end: UInt64, endsStretch: Bool, iteration: Bool) {
        guard end >= start else { return }
        let length = end - start
        lag.add(busyNanoseconds: length << 10)
        if length > stretchLongest.pointee.load(ordering: .relaxed) { stretchLongest.pointee.store(length, ordering: .relaxed) }
        if iteration { stretchIterations.pointee.store(stretchIterations.pointee.load(ordering: .relaxed) &+ 1, ordering: .relaxed) }
        let bucketStart = cachedEpoch.pointee.load(ordering: .relaxed) &* Self.bucketUnits
        if start &- bucketStart < Self.bucketUnits && end &- bucketStart < Self.bucketUnits {
            // The common case: the piece is inside the bucket last written.
            let slot = words + 3 * Int(cachedSlot.pointee.load(ordering: .relaxed))
            let packed = (slot + 1).pointee.load(ordering: .relaxed)
            (slot + 1).pointee.store(max(packed >> 32, min(length, UInt64(UInt32.max))) << 32 | ((packed & 0xffff_ffff) &+ length), ordering: .relaxed)
            if endsStretch || iteration { addCounts(slot, stretches: endsStretch ? 1 : 0, iterations: iteration ? 1 : 0) }
            return
        }
        addBusy(from: start, to: end, longest: length)
        // Cached from here on (the slot addBusy may have reset is the one of end's bucket, or older).
        guard let slot = slot(at: end) else { return }
        if endsStretch || iteration { addCounts(slot, stretches: endsStretch ? 1 : 0, iterations: iteration ? 1 : 0) }
    }

    /// The bucket of `time`, from the cache when it is the bucket last written, else found (a
    /// division, at most once per bucket) and cached.
    @inline(__always)
    private func slot(at time: UInt64) -> UnsafeMutablePointer<Atomic<UInt64>>? {
        let epoch = cachedEpoch.pointee.load(ordering: .relaxed)
        if time &- epoch &* Self.bucketUnits < Self.bucketUnits { return words + 3 * Int(cachedSlot.pointee.load(ordering: .relaxed)) }
        let found = time / Self.bucketUnits
        guard let slot = bucket(found) else { return nil }
        cachedEpoch.pointee.store(found, ordering: .relaxed)
        cachedSlot.pointee.store(found % UInt64(buckets), ordering: .relaxed)
        return slot
    }

    /// The bucket of `epoch`, reset first if it holds an older one. Nil: `epoch` is older than
    /// the ring already holds there (a piece that began more than the window ago).
    @inline(__always)
    private func bucket(_ epoch: UInt64) -> UnsafeMutablePointer<Atomic<UInt64>>? {
        let slot = words + 3 * Int(epoch % UInt64(buckets))
        let held = slot.pointee.load(ordering: .relaxed)
        if held == epoch { return slot }
        if held != Self.invalidEpoch && held > epoch { return nil }
        slot.pointee.store(Self.invalidEpoch, ordering: .relaxed)
        (slot + 1).pointee.store(0, ordering: .relaxed)
        (slot + 2).pointee.store(0, ordering: .relaxed)
        slot.pointee.store(epoch, ordering: .releasing)
        return slot
    }

    @inline(__always)
    private func addBusy(from start: UInt64, to end: UInt64, longest: UInt64) {
        let last = end / Self.bucketUnits
        var epoch = start / Self.bucketUnits
        // Only the window's buckets: older parts of a long piece are outside it.
        if last - epoch >= UInt64(buckets) { epoch = last - UInt64(buckets) + 1 }
        let longest32 = min(longest, UInt64(UInt32.max))
        while epoch <= last {
            let from = max(start, epoch * Self.bucketUnits)
            let to = min(end, (epoch + 1) * Self.bucketUnits)
            if let slot = bucket(epoch) {
                let packed = (slot + 1).pointee.load(ordering: .relaxed)
                let busy = (packed & 0xffff_ffff) &+ (to - from)
                let held = packed >> 32
                (slot + 1).pointee.store((epoch == last ? max(held, longest32) : held) << 32 | busy, ordering: .relaxed)
            }
            epoch += 1
        }
    }

    @inline(__always)
    private func addCounts(_ slot: UnsafeMutablePointer<Atomic<UInt64>>, stretches: UInt64, iterations: UInt64) {
        (slot + 2).pointee.store((slot + 2).pointee.load(ordering: .relaxed) &+ (iterations << 32 | stretches), ordering: .relaxed)
    }

    // MARK: The watchdog

    /// One bucket as read, in the latch's units; nil counts: stale (an older epoch, or never
    /// written: idle) or torn (rewritten while read).
    struct Bucket: Equatable, Sendable {
        var epoch: UInt64
        var busyUnits: UInt64 = 0
        var longestUnits: UInt64 = 0
        var stretches: UInt64 = 0
        var iterations: UInt64 = 0
        /// Rewritten while it was read: its counts are left out (read as idle).
        var torn = false
    }

    /// The `buckets` buckets up to and including the one of `time` (units), oldest first.
    func read(endingAt time: UInt64) -> [Bucket] {
        let last = time / Self.bucketUnits
        let first = last >= UInt64(buckets) - 1 ? last - UInt64(buckets) + 1 : 0
        return (first...last).map { epoch in
            let slot = words + 3 * Int(epoch % UInt64(buckets))
            var bucket = Bucket(epoch: epoch)
            guard slot.pointee.load(ordering: .acquiring) == epoch else { return bucket }
            let busy = (slot + 1).pointee.load(ordering: .relaxed)
            let counts = (slot + 2).pointee.load(ordering: .relaxed)
            guard slot.pointee.load(ordering: .acquiring) == epoch else {
                bucket.torn = true
                return bucket
            }
            bucket.busyUnits = busy & 0xffff_ffff
            bucket.longestUnits = busy >> 32
            bucket.stretches = counts & 0xffff_ffff
            bucket.iterations = counts >> 32
            return bucket
        }
    }

    /// The current busy stretch: when it began (units), the iterations begun in it, its longest
    /// piece that ended (units).
    func stretch() -> (start: UInt64, iterations: UInt64, longestUnits: UInt64) {
        (
            stretchStart.pointee.load(ordering: .relaxed), stretchIterations.pointee.load(ordering: .relaxed),
            stretchLongest.pointee.load(ordering: .relaxed)
        )
    }
}
