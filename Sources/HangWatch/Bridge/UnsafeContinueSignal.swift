import CHangWatchCapture

/// The SIGCONT stamp (`hw_continue.c`): installed once per process where SIGCONT has no handler of
/// the host's, it counts the SIGCONTs the process receives and stamps the latest. A process stopped
/// by a signal goes on only with a SIGCONT; a cgroup freezer's thaw and a debugger's continue send
/// none.
enum UnsafeContinueSignal {
    enum Installation: Equatable {
        case installed
        /// The host handles or ignores SIGCONT: left alone, no stamp.
        case hostsDisposition
        case failed(errno: Int32)
    }

    static func install() -> Installation {
        let result = hw_continue_install()
        switch result {
        case 0: return .installed
        case 1: return .hostsDisposition
        default: return .failed(errno: -result)
        }
    }

    /// Lets SIGCONT through on the calling thread (the watchdog's): in a process started with it
    /// blocked in every thread, the handler runs there.
    static func unblockOnCurrentThread() {
        hw_continue_unblock()
    }

    /// Ours, and still the handler (nobody replaced it since).
    static var isCurrent: Bool { hw_continue_is_current() == 1 }

    /// SIGCONTs since the install, and the latest one's `CLOCK_MONOTONIC` time (µs; 0: none yet).
    static func stamp() -> (count: UInt64, lastMicroseconds: UInt64) {
        let count = hw_continue_count()
        return (count, hw_continue_last_ns() / 1000)
    }
}
