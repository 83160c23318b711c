/// A token bucket: up to `burst` reports at once, `perMinute` on average. Pure; time comes in.
struct ReportRateLimiter: Sendable, Equatable {
    let burst: Double
    let perMicrosecond: Double
    private var tokens: Double
    private var updatedAt: UInt64?

    init(burst: Int, perMinute: Int) {
        self.burst = Double(burst)
        perMicrosecond = Double(perMinute) / 60_000_000
        tokens = Double(burst)
    }

    /// Takes a token if one is available at `now` (microseconds).
    mutating func admit(now: UInt64) -> Bool {
        if let updatedAt, now > updatedAt {
            tokens = min(burst, tokens + Double(now - updatedAt) * perMicrosecond)
        }
        updatedAt = max(updatedAt ?? now, now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Gives back a token taken for a file that was removed again (a provisional report folded
    /// into an earlier one).
    mutating func refund() {
        tokens = min(burst, tokens + 1)
    }

    /// How long until `admit` would succeed, from `now` (0 when it would now).
    func microsecondsUntilToken(now: UInt64) -> UInt64 {
        var available = tokens
        if let updatedAt, now > updatedAt { available = min(burst, available + Double(now - updatedAt) * perMicrosecond) }
        guard available < 1, perMicrosecond > 0 else { return 0 }
        return UInt64(((1 - available) / perMicrosecond).rounded(.up))
    }
}
