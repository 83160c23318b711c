import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The sd_notify protocol, spoken directly: newline-separated `KEY=VALUE` assignments in one
/// datagram to the `AF_UNIX` socket named by `$NOTIFY_SOCKET` (a path, or `@name` for the abstract
/// namespace). Without `$NOTIFY_SOCKET` (not started by systemd) every call does nothing.
final class SystemdNotifier: SystemdNotifying {
    let socketPath: String?
    private let descriptor = Mutex<Int32>(-1)

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"] ?? ""
        socketPath = path.hasPrefix("/") || path.hasPrefix("@") ? path : nil
    }

    /// The most bytes of a socket's name `sockaddr_un` holds: a path ends with a NUL, an abstract
    /// name (`@…`, its `@` sent as a NUL) does not.
    static func fits(_ socketPath: String) -> Bool {
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        return socketPath.hasPrefix("@") ? socketPath.utf8.count <= capacity : socketPath.utf8.count < capacity
    }

    deinit {
        descriptor.withLock { if $0 >= 0 { close($0) } }
    }

    var isEnabled: Bool { socketPath != nil }

    @discardableResult
    func notify(_ message: String) -> Bool {
        // A name too long for the address is a socket nobody can reach: false, so the caller warns.
        guard let socketPath, Self.fits(socketPath) else { return false }
        return descriptor.withLock { fd in
            if fd < 0 { fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
            guard fd >= 0 else { return false }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            var bytes = Array(socketPath.utf8)
            if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
            withUnsafeMutableBytes(of: &address.sun_path) { path in
                for (index, byte) in bytes.enumerated() { path[index] = byte }
            }
            let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
            let payload = Array(message.utf8)
            let sent = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    payload.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), socketAddress, length) }
                }
            }
            return sent == payload.count
        }
    }

    /// How often to send `WATCHDOG=1`: half of `$WATCHDOG_USEC`, if the watchdog is meant for this
    /// process (`$WATCHDOG_PID` unset or equal to `pid`); nil if there is no watchdog. Kept between
    /// `minimumPingInterval` and `maximumPingInterval` (pinging more often than needed is harmless;
    /// a huge timeout must not overflow a timer).
    static func watchdogInterval(
        environment: [String: String] = ProcessInfo.processInfo.environment, pid: Int32 = getpid()
    ) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"], !owner.isEmpty, Int32(owner) != pid { return nil }
        let half = Duration.microseconds(Int64(clamping: microseconds / 2))
        return min(max(half, minimumPingInterval), maximumPingInterval)
    }

    static let minimumPingInterval: Duration = .milliseconds(10)
    static let maximumPingInterval: Duration = .seconds(3600)

    /// Why the watchdog settings in `environment` are not used, when they are set but not for this
    /// process or not a number of microseconds; nil when they are used or absent.
    static func watchdogSettingsIgnored(
        environment: [String: String] = ProcessInfo.processInfo.environment, pid: Int32 = getpid()
    ) -> String? {
        guard let text = environment["WATCHDOG_USEC"] else { return nil }
        guard let microseconds = UInt64(text), microseconds > 0 else {
            return "WATCHDOG_USEC is not a positive number of microseconds"
        }
        if let owner = environment["WATCHDOG_PID"], !owner.isEmpty, Int32(owner) != pid {
            return "WATCHDOG_PID names another process"
        }
        return nil
    }

}
