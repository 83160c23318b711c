/// Which `hangwatch dump` requests the process answers with a dump, and which it refuses, and why:
/// a pure decision over the requests pending at one turn of the watchdog and the time.
///
/// A dump walks every thread on the watchdog's thread, between a hang's samples, so requests are
/// bounded: one dump at a time (of the requests that arrived together, the first is served and the
/// others are told the monitor is busy), and at most `perMinute` a minute with a burst of `burst`
/// (a token bucket: a token comes back every 60 / `perMinute` seconds).
struct DumpAdmission: Equatable {
    enum Decision: Equatable {
        case serve
        case refuse(String)
    }

    /// Why a request that came with another (or while a task dump waits) is refused.
    static let busy = "busy: another dump is being taken; try again"

    let burst: Int
    let perMinute: Int
    /// Tokens left, in thousandths (a token refills in steps smaller than one).
    private(set) var milliTokens: Int
    /// When the bucket was last refilled, `CLOCK_MONOTONIC` microseconds.
    private(set) var refilledAt: UInt64?

    init(burst: Int = 3, perMinute: Int = 6) {
        precondition(burst >= 1 && perMinute >= 1)
        self.burst = burst
        self.perMinute = perMinute
        milliTokens = burst * 1000
    }

    private var microsecondsPerToken: UInt64 { 60_000_000 / UInt64(perMinute) }

    /// The decisions for `count` requests pending at `now`, in their order.
    mutating func admit(_ count: Int, at now: UInt64) -> [Decision] {
        refill(at: now)
        return (0..<count).map { position in
            if position > 0 { return .refuse(Self.busy) }
            guard milliTokens >= 1000 else {
                let wait = (UInt64(1000 - milliTokens) * microsecondsPerToken / 1000 + 999_999) / 1_000_000
                return .refuse("rate limit: at most \(perMinute) dumps a minute (\(burst) at once); try again in \(wait) s")
            }
            milliTokens -= 1000
            return .serve
        }
    }

    private mutating func refill(at now: UInt64) {
        defer { refilledAt = now }
        guard let refilledAt, now > refilledAt else { return }
        let gained = (now - refilledAt) * 1000 / microsecondsPerToken
        milliTokens = min(burst * 1000, milliTokens + Int(min(gained, UInt64(burst * 1000))))
    }
}
