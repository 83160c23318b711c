#if canImport(Glibc)
import Glibc
#endif

/// The real-time signal that asks a hung thread for its stack.
///
/// Real-time signals are queued, carry a value (our request generation), and are used by neither
/// the Swift runtime nor libdispatch. glibc keeps the first few for itself; `SIGRTMIN` already
/// skips them.
enum CaptureSignal {
    static var realtimeRange: ClosedRange<Int32> {
        __libc_current_sigrtmin()...__libc_current_sigrtmax()
    }

    /// `SIGRTMIN+7`: clear of glibc's own and of the low real-time signals other tools favour.
    static var defaultSignal: Int32 {
        min(__libc_current_sigrtmin() + 7, __libc_current_sigrtmax())
    }

    /// Parses `40`, `SIGRTMIN+7`, `RTMIN+7`, `SIGRTMAX-2`.
    static func parse(_ text: String) -> Int32? {
        let trimmed = text.uppercased().filter { !$0.isWhitespace }
        if let number = Int32(trimmed) { return number }
        let name = trimmed.hasPrefix("SIG") ? String(trimmed.dropFirst(3)) : trimmed
        for (prefix, base) in [("RTMIN", __libc_current_sigrtmin()), ("RTMAX", __libc_current_sigrtmax())]
        where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            if rest.isEmpty { return base }
            guard let offset = Int32(rest) else { return nil }
            return base + offset
        }
        return nil
    }
}
