import Foundation
import Synchronization
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

    /// A service manager that does not read its socket (busy, or stuck) never stops the agent: a
    /// full queue drops the message (`false`, so READY is warned about) instead of blocking the
    /// pass that sends it; once the queue drains, messages go through again.
    @Test func aSocketNobodyReadsDropsMessagesInsteadOfBlocking() throws {
        let socket = try NotifySocket(abstract: false)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.address])
        let done = DispatchSemaphore(value: 0)
        let results = Mutex<[Bool]>([])
        Thread.detachNewThread {
            for index in 0..<5_000 {
                let sent = notifier.notify(["STATUS": "pass \(index): " + String(repeating: "x", count: 100)])
                results.withLock { $0.append(sent) }
            }
            done.signal()
        }
        // A generous bound: 5,000 non-blocking sends take milliseconds; a blocking one never returns.
        #expect(done.wait(timeout: .now() + 60) == .success, "a send blocked on the full queue")
        let sent = results.withLock { $0 }
        #expect(sent.first == true && sent.contains(false), "\(sent.filter { $0 }.count) of \(sent.count) sent")
        while socket.receive(timeout: 0.1) != nil {}
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
