import Foundation
import Testing
import ToolsTestSupport

@testable import HangWatchAgent

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
