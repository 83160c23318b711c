import Foundation
import Testing

@testable import HangWatchAgent

/// A datagram socket the test owns, standing in for systemd's notify socket.
final class NotifySocket {
    let fd: Int32
    let address: String

    /// `abstract`: an `@name` address in the abstract namespace; otherwise a path.
    init(abstract: Bool) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let name = "hangwatch-notify-\(getpid())-\(UUID().uuidString.prefix(8))"
        address = abstract ? "@" + name : FileManager.default.temporaryDirectory.path + "/" + name + ".sock"
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { path in for (index, byte) in bytes.enumerated() { path[index] = byte } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &socketAddress) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard fd >= 0, bound == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    deinit {
        close(fd)
        if !address.hasPrefix("@") { unlink(address) }
    }

    /// The next datagram, or nil after `timeout` seconds.
    func receive(timeout: Double) -> String? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }
}

@Suite struct SystemdNotifierTests {
    @Test(arguments: [false, true])
    func sendsAssignmentsToThePathOrAbstractSocket(_ abstract: Bool) throws {
        let socket = try NotifySocket(abstract: abstract)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.address])
        #expect(notifier.isEnabled)
        #expect(notifier.notify(["READY": "1", "STATUS": "3 services,\nfine"]))
        #expect(socket.receive(timeout: 2) == "READY=1\nSTATUS=3 services, fine")
        #expect(notifier.notify("WATCHDOG=1"))
        #expect(socket.receive(timeout: 2) == "WATCHDOG=1")
    }

    @Test func withoutSystemdNothingIsSent() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        #expect(!notifier.notify("READY=1"))
        #expect(!SystemdNotifier(environment: ["NOTIFY_SOCKET": "relative"]).isEnabled)
    }

    @Test func theWatchdogIsPingedAtHalfItsTimeoutWhenItIsMeantForThisProcess() {
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"], pid: 10) == .seconds(15))
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "10"], pid: 10) == .seconds(15))
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "11"], pid: 10) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "soon"], pid: 10) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: [:], pid: 10) == nil)
    }

    @Test func extremeWatchdogTimeoutsAreKeptWithinBoundsAndBadOnesAreExplained() {
        // The largest value systemd could pass must not overflow a timer; a tiny one must not spin.
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "\(UInt64.max)"], pid: 10) == .seconds(3600))
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "1"], pid: 10) == .milliseconds(10))
        for garbage in ["0", "-5", "", "1e6", "99999999999999999999999", " 30"] {
            #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": garbage], pid: 10) == nil, "\(garbage)")
            #expect(
                SystemdNotifier.watchdogSettingsIgnored(environment: ["WATCHDOG_USEC": garbage], pid: 10)
                    == "WATCHDOG_USEC is not a positive number of microseconds", "\(garbage)")
        }
        #expect(
            SystemdNotifier.watchdogSettingsIgnored(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "11"], pid: 10)
                == "WATCHDOG_PID names another process")
        #expect(SystemdNotifier.watchdogSettingsIgnored(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "10"], pid: 10) == nil)
        #expect(SystemdNotifier.watchdogSettingsIgnored(environment: [:], pid: 10) == nil)
    }

    @Test func aNotifySocketThatIsMissingNotASocketOrGarbageFailsQuietly() throws {
        let scratch = FileManager.default.temporaryDirectory.path + "/hangwatch-notify-\(getpid())-\(UUID().uuidString.prefix(6))"
        _ = FileManager.default.createFile(atPath: scratch, contents: Data("x".utf8))
        defer { unlink(scratch) }
        let values = [
            scratch + ".missing", scratch, "@", "@hangwatch-nobody-listens-\(getpid())", String(repeating: "/x", count: 200), "\u{0}\u{ff}",
        ]
        for value in values {
            let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": value])
            #expect(!notifier.notify(["READY": "1"]), "\(value)")
        }
        // A regular file is left as it was.
        #expect(try String(contentsOfFile: scratch, encoding: .utf8) == "x")
    }
}
