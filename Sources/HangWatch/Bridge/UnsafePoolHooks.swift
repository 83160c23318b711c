import CHangWatchCapture

/// The runtime's global-enqueue hooks that wake a resting pool watch (`hw_pool_wake.c`; not
/// signal-handler code). `UnsafeRuntimeEnqueueHooks` is their one user.
enum UnsafePoolHooks {
    /// Installs the hooks once per process; false when this runtime has none.
    static func install(wake: @convention(c) () -> Void) -> Bool { hw_pool_hooks_install(wake) == 0 }
    /// All three hooks are still ours.
    static var areCurrent: Bool { hw_pool_hooks_current() == 1 }
    static func arm() { hw_pool_arm() }
    /// When the enqueue that woke happened, monotonic nanoseconds (0: none).
    static func disarm() -> UInt64 { hw_pool_disarm() }
    static func ownEnqueues(_ own: Bool) { hw_pool_own_enqueues(own ? 1 : 0) }
    /// The next delayed job's due time after `nowNanoseconds`: 0 none, -1 unknown.
    static func nextDelayed(afterNanoseconds now: UInt64) -> Int64 { hw_pool_next_delayed(now) }
}
