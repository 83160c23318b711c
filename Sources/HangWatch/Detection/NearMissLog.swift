/// The near misses one lane sampled: busy pieces that passed half the threshold (`HangDetector`'s
/// `nearMiss`), one stack each, taken then. The last `capacity` are kept, oldest first, for the
/// lead-up of the next hang (`LeadUpRecord.nearMisses`). The watchdog's thread only; the loop never
/// touches it.
struct NearMissLog: Sendable {
    /// One near miss: the piece (its latch word), when it began, and the sample taken half-way.
    struct Entry: Sendable, Equatable {
        var word: UInt64
        var startMicroseconds: UInt64
        var sample: StackSample
    }

    /// 32 pieces of half a threshold and more: over 3 s of a loop saturated with them at a 200 ms
    /// threshold; each holds one stack (at most `maxFrames` addresses).
    static let capacity = 32

    private(set) var entries: [Entry] = []

    /// Whether the piece of latch word `word` was sampled already.
    func sampled(word: UInt64) -> Bool { entries.last?.word == word }

    mutating func add(_ entry: Entry) {
        if entries.count == Self.capacity { entries.removeFirst() }
        entries.append(entry)
    }

    /// Forgets the piece of latch word `word`, or that began at `startMicroseconds`: it became a
    /// hang (sampled half-way before it was one), and a hang is no near miss of later ones.
    mutating func forget(word: UInt64? = nil, startMicroseconds: UInt64? = nil) {
        entries.removeAll { $0.word == word || $0.startMicroseconds == startMicroseconds }
    }

    /// The near misses a hang whose piece began at `onset` (microseconds, its latch word `word`)
    /// had in the `windowMicroseconds` before it, oldest first: the hang's own piece is no near
    /// miss of its own.
    func before(onset: UInt64, word: UInt64, windowMicroseconds: UInt64) -> [Entry] {
        let from = onset > windowMicroseconds ? onset - windowMicroseconds : 0
        return entries.filter { $0.word != word && $0.startMicroseconds >= from && $0.startMicroseconds < onset }
    }
}
