import Foundation
import HangWatch

// The hang sites. Their code is the same in both builds of this service (RebuildGroupingTests):
// only Padding.swift changes, which the linker puts before them, so every address here moves.
// `@inline(never)` keeps each function a frame of its own, as in code that does real work.

@inline(never)
func spin(milliseconds: Int) -> UInt64 {
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
    var value: UInt64 = 1
    while DispatchTime.now().uptimeNanoseconds < end { value = value &* 31 &+ 7 }
    return value
}

enum Pricing {
    /// Computes; called from two places (two call paths: two groups).
    @inline(never)
    static func recompute(milliseconds: Int) -> UInt64 { spin(milliseconds: milliseconds) }
}

enum Quotes {
    @inline(never)
    static func refresh() -> UInt64 { Pricing.recompute(milliseconds: Sites.hangMilliseconds) }
}

enum Checkout {
    @inline(never)
    static func total() -> UInt64 { Pricing.recompute(milliseconds: Sites.hangMilliseconds) }
}

enum Audit {
    /// Sleeps (blocked in clock_nanosleep).
    @inline(never)
    static func flush() { usleep(UInt32(Sites.hangMilliseconds) * 1000) }
}

enum Cache {
    /// Waits for a lock another thread holds (blocked in futex).
    @inline(never)
    static func waitForLock() {
        let lock = NSLock()
        let held = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            lock.lock()
            held.signal()
            usleep(UInt32(Sites.hangMilliseconds) * 1000)
            lock.unlock()
        }
        held.wait()
        lock.lock()
        lock.unlock()
    }
}

enum Inventory {
    /// An async handler whose step blocks its pool thread (a pool-job report with async callers).
    @inline(never)
    static func handle() async { await scan() }

    @inline(never)
    static func scan() async {
        await Task.yield()
        usleep(UInt32(Sites.hangMilliseconds + 200) * 1000)
    }
}

enum Sites {
    static let hangMilliseconds = 300

    /// Every site, by name: what the test expects a group of each.
    static let names = ["Quotes.refresh", "Checkout.total", "Audit.flush", "Cache.waitForLock", "Inventory.scan"]
}
