import Foundation

/// Waiting for a condition that another thread or process brings about, up to a deadline: the
/// one place the tests poll. A test waits for what it needs, never for a fixed time.
public enum Eventually {
    /// Looks at `probe` every `interval` until `condition` holds or `timeout` passes; returns the
    /// last value looked at (the caller asserts on it).
    @discardableResult
    public static func value<T>(
        timeout: TimeInterval = 10, interval: TimeInterval = 0.01, _ probe: () -> T, until condition: (T) -> Bool
    ) -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let value = probe()
            if condition(value) || Date() >= deadline { return value }
            usleep(useconds_t(interval * 1e6))
        }
    }

    /// Waits until `condition` holds (true) or `timeout` passes (false).
    @discardableResult
    public static func holds(timeout: TimeInterval = 10, interval: TimeInterval = 0.01, _ condition: () -> Bool) -> Bool {
        value(timeout: timeout, interval: interval, condition, until: { $0 })
    }
}

/// Code under test that blocks in the kernel for a while: the thread sleeps (a hang the monitor
/// must see as blocked, not computing).
public enum Blocking {
    /// Sleeps `milliseconds` in the kernel (`nanosleep`), and returns how long it really slept.
    @inline(never)
    @discardableResult
    public static func sleep(milliseconds: Int) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        usleep(useconds_t(milliseconds * 1000))
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
    }
}
