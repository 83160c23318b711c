import Foundation

/// A pretend service whose run loop hangs on purpose, in the ways real services do.
/// Every function is `@inline(never)` so it shows up by name in the reports.
enum DemoService {
    /// A timer callback that computes for too long.
    @inline(never)
    static func recomputePricing(milliseconds: Int) -> UInt64 {
        busyCompute(milliseconds: milliseconds)
    }

    /// A block on the main dispatch queue that computes for too long.
    @inline(never)
    static func parseInventorySnapshot(milliseconds: Int) -> UInt64 {
        busyCompute(milliseconds: milliseconds)
    }

    /// A callback that waits for a lock another thread holds.
    @inline(never)
    static func waitForCacheLock(_ lock: NSLock) {
        lock.lock()
        lock.unlock()
    }

    /// A callback that sleeps on the loop's thread (a blocking call in disguise).
    @inline(never)
    static func flushAuditLogSynchronously(milliseconds: Int) {
        usleep(useconds_t(milliseconds * 1000))
    }

    /// A callback that runs a nested run loop in a custom mode, like a modal session: the nested
    /// loop first sleeps (not a hang), then one of its own callbacks computes for too long.
    @inline(never)
    static func runModalSession(idleMilliseconds: Int, hangMilliseconds: Int) {
        let mode = RunLoop.Mode("DemoModalMode")
        let timer = Timer(fire: Date(timeIntervalSinceNow: Double(idleMilliseconds) / 1000), interval: 0, repeats: false) { _ in
            _ = renderModalFrame(milliseconds: hangMilliseconds)
        }
        RunLoop.current.add(timer, forMode: mode)
        let end = Date().addingTimeInterval(Double(idleMilliseconds + hangMilliseconds) / 1000 + 0.2)
        while Date() < end && RunLoop.current.run(mode: mode, before: end) {}
        timer.invalidate()
    }

    @inline(never)
    static func renderModalFrame(milliseconds: Int) -> UInt64 {
        busyCompute(milliseconds: milliseconds)
    }

    @inline(never)
    static func busyCompute(milliseconds: Int) -> UInt64 {
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        while DispatchTime.now().uptimeNanoseconds < end {
            for _ in 0..<512 { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
        }
        return state
    }
}
