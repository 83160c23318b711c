import CHangWatchCapture

/// Dump requests (`hangwatch dump PID`): the capture signal from another process, tagged with a
/// nonce; the handler keeps it in a slot and posts the one wake registered (`hw_wake.c`).
enum UnsafeDumpRequests {
    /// `semaphore` is posted when one arrives (one registration at a time: the latest).
    static func register(_ semaphore: UnsafeMutableRawPointer) { hw_dump_register(semaphore) }
    static func unregister(_ semaphore: UnsafeMutableRawPointer) { hw_dump_unregister(semaphore) }
    /// Every pending request's nonce, in the order of their slots; their slots freed.
    static func takeAll() -> [UInt64] {
        var nonces: [UInt64] = []
        while nonces.count < 64 {
            let nonce = hw_dump_take()
            if nonce == 0 { break }
            nonces.append(nonce)
        }
        return nonces
    }
}
