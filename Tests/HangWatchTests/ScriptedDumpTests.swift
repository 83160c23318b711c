import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Logging
import Testing

/// `hangwatch dump` on scripted time, through the monitor's own dump lane, registry and server:
/// requests arrive as the signal handler delivers them (nonces pending, the answering monitor's
/// wake posted), the thread walk is scripted, and the answers land in a real report directory.
@Suite struct ScriptedDumpTests {
    /// The signal handler's slots, as the script fills them.
    final class Requests: @unchecked Sendable {
        var pending: [UInt64] = []
        var dumpsTaken = 0
        /// The script's time, once the harness is made.
        var clock: ScriptedClock?

        func take() -> [UInt64] {
            defer { pending = [] }
            return pending
        }
    }

    /// Two threads: the main one computing, a worker blocked on a mutex thread 21 holds.
    static func dump(at microseconds: UInt64) -> ProcessDump {
        let wait = WaitObservation(
            microseconds: microseconds, object: .mutex(address: 0x7f00_0040), syscall: Syscalls.futex, file: nil, owner: .thread(21),
            holder: HolderLook(owner: .thread(21), name: "holder", state: "R"))
        return ProcessDump(
            threads: [
                .init(tid: 4242, name: "main", sample: ScriptedSampler.computing(), wait: nil, offCPUMicroseconds: nil),
                .init(tid: 4243, name: "worker", sample: ScriptedWaitInspector.blockedOnMutex(), wait: wait, offCPUMicroseconds: 120_000),
            ], microseconds: microseconds)
    }

    static func harness(_ requests: Requests, log: LogRecorder? = nil) -> WatchdogHarness {
        let dumps = MonitorWorld.Dumps(
            requests: { requests.take() },
            take: { _ in
                requests.dumpsTaken += 1
                return dump(at: requests.clock?.now ?? 0)
            }, needHeartbeat: false)
        let h = WatchdogHarness(logger: log?.logger ?? Logger(label: "hangwatch.tests", factory: { _ in SwiftLogNoOpLogHandler() }), dumps: dumps)
        requests.clock = h.clock
        return h
    }

    /// Requests `nonces` at `milliseconds`, as the capture signal's handler does.
    static func request(_ nonces: [UInt64], at milliseconds: Double, _ h: WatchdogHarness, _ requests: Requests) {
        h.clock.at(h.t(milliseconds)) { [wake = h.latch.wake] in
            requests.pending += nonces
            wake.signal()
        }
    }

    static func answers(_ h: WatchdogHarness) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: h.directory.path)) ?? []).filter { $0.hasPrefix(".dump-") }.sorted()
    }

    @Test func aRequestIsAnsweredAndTheAnswerNobodyTookIsRemovedWhenItsTimeComes() throws {
        let requests = Requests()
        let log = LogRecorder()
        let h = Self.harness(requests, log: log)
        Self.request([7], at: 100, h, requests)
        var seenAt1s: [String] = []
        var seenAt29s: [String] = []
        h.clock.at(h.t(1_000)) { seenAt1s = Self.answers(h) }
        h.clock.at(h.t(29_000)) { seenAt29s = Self.answers(h) }
        h.stop(at: 40_000)
        h.run()

        #expect(requests.dumpsTaken == 1)
        #expect(seenAt1s == [".dump-7.json"] && seenAt29s == [".dump-7.json"], "\(seenAt1s) \(seenAt29s)")
        // 30 s after it was written, on the script's time: removed by the lane's own deadline.
        #expect(Self.answers(h).isEmpty, "\(Self.answers(h))")
        #expect(log.count("thread dump answer nobody took removed") == 1)
        #expect(h.clock.waits.contains { $0.deadline == h.t(100) + DumpServer.unclaimedAnswerSeconds * 1_000_000 }, "\(h.clock.waits)")
    }

    @Test func theAnswerIsAReportOfEveryThreadWithItsWait() throws {
        let requests = Requests()
        let h = Self.harness(requests)
        Self.request([9], at: 100, h, requests)
        var answer: HangReport?
        h.clock.at(h.t(200)) { answer = try? ReportReader().read(path: h.directory.path + "/.dump-9.json") }
        h.stop(at: 300)
        h.run()
        let report = try #require(answer)
        #expect(report.source == "dump")
        let threads = try #require(report.threads)
        #expect(threads.map(\.tid) == [4242, 4243])
        #expect(threads[1].waitsFor?.holder?.tid == 21 && threads[1].waitsFor?.kind == "mutex")
        #expect(threads[1].offCPUMs == 120)
    }

    /// Three at once: the first served, the others refused as busy; then one a second: the burst of
    /// three lasts to the third dump, and the next is refused by the rate limit, with when to retry.
    @Test func requestsBeyondTheBoundAreRefusedWithTheirReason() throws {
        let requests = Requests()
        let h = Self.harness(requests)
        Self.request([1, 2, 3], at: 100, h, requests)
        Self.request([4], at: 1_100, h, requests)
        Self.request([5], at: 2_100, h, requests)
        Self.request([6], at: 3_100, h, requests)
        var seen: [String] = []
        var refusals: [UInt64: String] = [:]
        h.clock.at(h.t(4_000)) {
            seen = Self.answers(h)
            for nonce: UInt64 in [2, 3, 6] {
                refusals[nonce] = (try? String(contentsOfFile: h.directory.path + "/.dump-\(nonce).refused", encoding: .utf8)) ?? ""
            }
        }
        h.stop(at: 5_000)
        h.run()
        #expect(requests.dumpsTaken == 3)
        #expect(
            seen == [".dump-1.json", ".dump-2.refused", ".dump-3.refused", ".dump-4.json", ".dump-5.json", ".dump-6.refused"], "\(seen)")
        #expect(refusals[2]?.hasPrefix("busy") == true && refusals[3]?.hasPrefix("busy") == true, "\(refusals)")
        #expect(refusals[6]?.hasPrefix("rate limit") == true, "\(refusals)")
    }

    /// The latest monitor started answers; when it stops, the one before it does again, and the
    /// signal's wake follows.
    @Test func theLatestMonitorAnswersAndTheOneBeforeItWhenItStops() {
        final class Registrations: @unchecked Sendable { var calls: [(WatchdogWake?, WatchdogWake?)] = [] }
        let registrations = Registrations()
        let registry = DumpRegistry { registrations.calls.append(($0, $1)) }
        let (first, second) = (WatchdogControl(thresholdMicroseconds: 1), WatchdogControl(thresholdMicroseconds: 1))
        let (wakeA, wakeB) = (WatchdogWake(), WatchdogWake())
        registry.enroll(ObjectIdentifier(first), wake: wakeA)
        #expect(registry.answers(ObjectIdentifier(first)))
        registry.enroll(ObjectIdentifier(second), wake: wakeB)
        #expect(registry.answers(ObjectIdentifier(second)) && !registry.answers(ObjectIdentifier(first)))
        registry.withdraw(ObjectIdentifier(second))
        #expect(registry.answers(ObjectIdentifier(first)))
        registry.withdraw(ObjectIdentifier(first))
        #expect(!registry.answers(ObjectIdentifier(first)))
        let calls = registrations.calls.map { ($0.0.map(ObjectIdentifier.init), $0.1.map(ObjectIdentifier.init)) }
        let (a, b) = (ObjectIdentifier(wakeA), ObjectIdentifier(wakeB))
        #expect(calls.count == 4)
        #expect(calls.map { $0.0 } == [a, b, a, nil] && calls.map { $0.1 } == [nil, nil, b, a], "\(calls)")
    }
}
