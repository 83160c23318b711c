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

    /// A recent-window dump (bit 46 of the nonce) on scripted time: a run loop busy 50 ms of every
    /// 100 ms for 4.8 s, then busy for 150 ms when asked, reads about half busy over the window
    /// ending now, with the piece in progress counted, drawn in its buckets, and the longest; a
    /// second watch of the process whose recorder is off is listed, saying so. No thread is
    /// walked, and nothing but the answer is written.
    @Test func aRecentWindowDumpHoldsEveryWatchsWindowEndingNow() throws {
        let requests = Requests()
        let h = Self.harness(requests)
        let off = WatchdogHarness(joining: h, configure: { $0.leadUpWindow = .zero })
        for k in 0..<48 { h.busy(from: Double(k * 100), for: 50) }
        h.loop(.afterWaiting, at: 4_850)
        let nonce: UInt64 = 1 << 46 | 11
        Self.request([nonce], at: 5_000, h, requests)
        h.loop(.beforeWaiting, at: 5_050)
        var answer: HangReport?
        h.clock.at(h.t(5_100)) { answer = try? ReportReader().read(path: h.directory.path + "/.dump-\(nonce).json") }
        h.stop(at: 5_200)
        off.stop(at: 5_200)
        WatchdogHarness.run(together: [h, off])

        let report = try #require(answer, "\(Self.answers(h))")
        #expect(report.source == "recent" && report.activity == "recent")
        #expect(report.threads == nil && report.samples.isEmpty && requests.dumpsTaken == 0)
        let sources = try #require(report.recent?.sources)
        try #require(sources.map(\.source) == ["runloop", "runloop"])
        #expect(sources.allSatisfy { $0.service == "scripted" && $0.thresholdMs == 250 && $0.thread?.tid == MonitoredThread.scripted.tid })
        let window = try #require(sources[0].window)
        #expect(window.buckets.count == 50 && window.windowMs == 5_000)
        #expect(window.busyRatio > 0.49 && window.busyRatio < 0.55, "\(window.busyRatio)")
        // Every bucket's busy time adds up to the ratio over the time the window covers (4.9 to 5 s).
        let busy = window.buckets.reduce(0) { $0 + $1.busyMs }
        #expect(busy / window.busyRatio > 4_880 && busy / window.busyRatio < 5_020, "\(busy) ms busy")
        // The piece in progress, 150 ms: in the last two buckets' busy time, the longest, busy now.
        #expect(abs((sources[0].busyNowMs ?? 0) - 150) < 1, "\(String(describing: sources[0].busyNowMs))")
        #expect(abs((sources[0].longestMs ?? 0) - 150) < 1, "\(String(describing: sources[0].longestMs))")
        #expect(window.buckets.suffix(2).reduce(0) { $0 + $1.busyMs } >= 99, "\(window.buckets.suffix(2))")
        #expect(window.reading == "busy \(Int((window.busyRatio * 100).rounded())) % in the last 5 s", "\(window.reading)")
        #expect(sources[1].window == nil && sources[1].longestMs == nil && sources[1].busyNowMs == nil)
        #expect(sources[1].noRecorder == "its flight recorder is off (leadUpWindow 0)")
        #expect(Self.answers(h) == [".dump-\(nonce).json"], "\(Self.answers(h))")
    }

    /// One dump lane per process: the first directory that answers starts it and registers the
    /// watchdog's wake with the signal once; the directory open longest answers; when the last
    /// closes, the lane leaves and the wake is unregistered.
    @Test func theDirectoryOpenLongestAnswersAndTheLaneLeavesWithTheLast() throws {
        final class Registrations: @unchecked Sendable { var calls: [(WatchdogWake?, WatchdogWake?)] = [] }
        let registrations = Registrations()
        let clock = ScriptedClock()
        let environment = FakeWatchdogEnvironment(clock: clock)
        let runtime = ProcessRuntime(environment: environment, startsThreads: false) { registrations.calls.append(($0, $1)) }
        let requests = Requests()
        requests.clock = clock
        let (first, second) = (ReportDirectory(), ReportDirectory())
        func server(_ directory: ReportDirectory) throws -> DumpServer {
            let store = ReportStore(directory: directory.path)
            try store.prepare()
            return DumpServer(
                logger: Logger(label: "hangwatch.tests", factory: { _ in SwiftLogNoOpLogHandler() }), store: store,
                builder: ReportBuilder(
                    service: "scripted", host: "test-host", pid: 4242, process: HangReport.Process(executable: "/usr/bin/scripted", startTimeTicks: 1),
                    signal: 35, maxFrames: 64, wallClock: { environment.date(ofMicroseconds: $0) }, source: .runLoop),
                images: runtime.images(logger: Logger(label: "hangwatch.tests")), clock: clock,
                take: { Self.dump(at: clock.now) })
        }
        let owners = (Requests(), Requests())
        let (a, b) = (ObjectIdentifier(owners.0), ObjectIdentifier(owners.1))
        runtime.dumps.offer(try server(first), signal: 35, from: a, requests: { requests.take() })
        runtime.dumps.offer(try server(second), signal: 35, from: b, requests: { requests.take() })
        runtime.dumps.answer([1], at: clock.now)
        #expect(FileManager.default.fileExists(atPath: first.path + "/.dump-1.json"))
        runtime.dumps.withdraw(a)
        runtime.dumps.answer([2], at: clock.now)
        #expect(FileManager.default.fileExists(atPath: second.path + "/.dump-2.json"))
        #expect(!FileManager.default.fileExists(atPath: first.path + "/.dump-2.json"))
        runtime.dumps.withdraw(b)
        let wake = ObjectIdentifier(runtime.watchdog.wake)
        let calls = registrations.calls.map { ($0.0.map(ObjectIdentifier.init), $0.1.map(ObjectIdentifier.init)) }
        #expect(calls.count == 2)
        #expect(calls.map { $0.0 } == [wake, nil] && calls.map { $0.1 } == [nil, wake], "\(calls)")
    }
}
