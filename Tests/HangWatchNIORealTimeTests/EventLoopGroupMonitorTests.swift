import Foundation
@testable import HangWatch
import HangWatchNIO
import HangWatchReport
import HangWatchSymbolication
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import HangWatchTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Blocks the calling event loop: what a handler must never do (a blocking call in disguise).
@inline(never)
func lookUpCustomerSynchronously(milliseconds: Int) {
    Blocking.sleep(milliseconds: milliseconds)
}

/// Requests that blocked their loop under load: at most one per `spacing` (so each is its own hang).
final class BlockingPolicy: Sendable {
    let spacing: UInt64
    private let last = Mutex<UInt64>(0)
    let blocked = Mutex(0)
    init(spacingNanoseconds: UInt64) { spacing = spacingNanoseconds }

    func shouldBlock() -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        return last.withLock { last in
            guard now - last >= spacing else { return false }
            last = now
            blocked.withLock { $0 += 1 }
            return true
        }
    }

    /// `GET /together`: its two requests meet before they block (each waits up to 5 s for the
    /// other), so their loops are blocked at the same time by construction, not by the client's
    /// timing (beside a busy CPU, two requests sent at once once reached their loops 300 ms apart).
    let together = WorkerBarrier(count: 2)
    /// Each `/together` block as its loop's thread saw it.
    let togetherBlocks = Mutex<[TogetherBlock]>([])

    struct TogetherBlock: Sendable {
        var tid: Int32
        var milliseconds: Double
        var metPartner: Bool
    }
}

/// `GET /` answers at once; `GET /block` blocks its event loop for 300 ms first; `GET /sometimes`
/// blocks for 300 ms when `policy` says so (a small share of requests under load); `GET /together`
/// waits for the other `/together` request to reach its loop, then blocks for 300 ms (the wait
/// blocks the loop too).
final class TestHTTPHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let policy: BlockingPolicy

    init(policy: BlockingPolicy) {
        self.policy = policy
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        if head.uri == "/block" || (head.uri == "/sometimes" && policy.shouldBlock()) {
            lookUpCustomerSynchronously(milliseconds: 300)
        } else if head.uri == "/together" {
            let start = DispatchTime.now().uptimeNanoseconds
            let met = policy.together.arrive(timeout: .seconds(5))
            lookUpCustomerSynchronously(milliseconds: 300)
            let block = BlockingPolicy.TogetherBlock(
                tid: CPUShare.currentTID(), milliseconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6, metPartner: met)
            policy.togetherBlocks.withLock { $0.append(block) }
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "3")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: "ok\n")))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

/// The setup every test here shares: a fresh group, its loops watched (threshold 100 ms; the pool
/// watch off: the test's own client, `Data(contentsOf:)` on a pool thread, blocks while a loop is
/// held, and the pool watch rightly reports that job, but only the loops are under test), and an
/// HTTP server on it. `close()` undoes it all, in reverse order.
final class WatchedServer {
    let directory: String
    let group: MultiThreadedEventLoopGroup
    let watch: EventLoopGroupMonitor
    let channel: any Channel
    let port: Int

    /// The group the server accepts connections on when it is not the watched one.
    let acceptor: MultiThreadedEventLoopGroup?

    /// `ticks`: the group is made with an `EventLoopTicks` delegate, given to the watch too.
    /// `acceptsOnItsOwnLoop`: the server accepts on a loop of a group of its own (not watched), and
    /// hands every connection to a loop of the watched group; else one of the watched loops accepts.
    init(
        _ name: String, loops: Int = 2, policy: BlockingPolicy = BlockingPolicy(spacingNanoseconds: 900_000_000),
        ticks: Bool = false, acceptsOnItsOwnLoop: Bool = false, configure: (inout HangMonitor.Configuration) -> Void
    ) throws {
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-nio-\(name)-\(getpid())-\(UUID().uuidString.prefix(6))"
        let delegate = ticks ? EventLoopTicks() : nil
        let group = delegate.map { MultiThreadedEventLoopGroup(numberOfThreads: loops, metricsDelegate: $0) }
            ?? MultiThreadedEventLoopGroup(numberOfThreads: loops)
        var configuration = HangMonitor.Configuration(serviceName: "api", threshold: .milliseconds(100), reportDirectory: directory)
        configuration.watchesConcurrencyPool = false
        configure(&configuration)
        var watch: EventLoopGroupMonitor?
        var channel: (any Channel)?
        let acceptor = acceptsOnItsOwnLoop ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        do {
            watch = try HangMonitor.watch(group, ticks: delegate, configuration: configuration)
            channel = try EventLoopGroupMonitorTests.serve(group, acceptingOn: acceptor, policy: policy)
            guard let port = channel?.localAddress?.port else { throw ChannelError.unknownLocalAddress }
            self.port = port
        } catch {
            try? channel?.close().wait()
            watch?.stop()
            try? group.syncShutdownGracefully()
            try? acceptor?.syncShutdownGracefully()
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        self.directory = directory
        self.group = group
        self.acceptor = acceptor
        self.watch = watch!
        self.channel = channel!
    }

    func close() {
        try? channel.close().wait()
        watch.stop()
        try? group.syncShutdownGracefully()
        try? acceptor?.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite(.serialized) struct EventLoopGroupMonitorTests {
    /// What a busy machine adds to a report's end, in milliseconds: the end is the ping's answer,
    /// which runs when the loop's thread next gets a CPU (a block of 300 ms read 316 and 343 ms
    /// beside a release build). The edges' exactness is a goal, measured under `wrk` on a quiet
    /// machine (docs/performance.md); these tests keep the start exact (never short) and the end
    /// within a generous bound.
    static let cpuWaitSlack = 60.0

    static func reports(_ directory: String) -> [HangReport] {
        let symbolicator = Symbolicator()
        return ((try? ReportStore(directory: directory).list()) ?? []).compactMap { try? ReportReader().read(path: $0.path) }.map {
            var report = $0
            symbolicator.symbolicate(&report)
            return report
        }
    }

    /// An HTTP/1 server on loopback (any port) answering with `TestHTTPHandler` on `group`'s loops,
    /// accepting on one of `acceptor`'s (nil: of `group`'s).
    static func serve(_ group: any EventLoopGroup, acceptingOn acceptor: (any EventLoopGroup)? = nil, policy: BlockingPolicy) throws -> any Channel {
        try ServerBootstrap(group: acceptor ?? group, childGroup: group)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(TestHTTPHandler(policy: policy)) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
    }

    static func get(_ port: Int, _ path: String) -> Bool {
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else { return false }
        return (try? Data(contentsOf: url)) != nil
    }

    @Test func everyRequestThatBlocksItsLoopIsReportedWithTheBlockingFunction() throws {
        let server = try WatchedServer("loops") { $0.repeatWindow = .zero }
        defer { server.close() }
        let (directory, watch, port) = (server.directory, server.watch, server.port)
        #expect(watch.monitors.count == 2)

        // Every loop attached (its first ping ran), then quick requests: no hangs.
        #expect(Eventually.holds { watch.monitors.allSatisfy(\.isAttached) })
        for _ in 0..<30 { #expect(Self.get(port, "/")) }

        // Two blocking requests, one after the other.
        for _ in 0..<2 { #expect(Self.get(port, "/block")) }
        let reports = ReportDirectory(path: directory).waitForFinished(2)
        #expect(reports.count == 2, "\(reports.map(\.id))")
        for report in reports {
            #expect(report.source == "nio-eventloop")
            #expect(report.thread.name?.hasPrefix("NIO-ELT") == true, "\(report.thread.name ?? "-")")
            let symbols = report.heaviestStack?.frames.compactMap(\.symbol) ?? []
            #expect(symbols.contains { $0.contains("lookUpCustomerSynchronously") }, "\(symbols)")
            #expect(report.durationMs >= 100 && report.durationMs <= 400, "\(report.durationMs)")
        }
        #expect(watch.hangsDetected == 2)
    }

    /// The loops report through one writer: the same culprit blocking both loops of a group is
    /// one report, its other hangs folded into it as repeats (not one report per loop).
    @Test func theSameCulpritOnTwoLoopsIsOneReportWithItsRepeats() throws {
        let server = try WatchedServer("fold") { $0.repeatWindow = .seconds(600) }
        defer { server.close() }
        let (directory, watch, port) = (server.directory, server.watch, server.port)
        #expect(Eventually.holds { watch.monitors.allSatisfy(\.isAttached) })
        // Each request is a new connection; the group hands connections to its loops in turn.
        for _ in 0..<4 { #expect(Self.get(port, "/block")) }
        #expect(Eventually.holds { watch.hangsDetected == 4 && watch.reportsWritten + watch.hangsFolded == 4 })
        watch.stop()
        let perLoop = watch.monitors.map(\.statistics.hangsDetected)
        #expect(perLoop.allSatisfy { $0 > 0 }, "hangs per loop: \(perLoop)")
        let reports = Self.reports(directory)
        try #require(reports.count == 1, "\(reports.map(\.thread.name))")
        #expect(reports[0].repeats?.count == 3)
        #expect(watch.reportsWritten == 1 && watch.hangsFolded == 3)
        let symbols = reports[0].heaviestStack?.frames.compactMap(\.symbol) ?? []
        #expect(symbols.contains { $0.contains("lookUpCustomerSynchronously") }, "\(symbols)")
    }

    /// Threads of this process named `name` (`/proc/self/task/*/comm`).
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { tid in
            (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    /// One watchdog thread and one epoll watcher thread for the whole group, however many loops;
    /// two loops blocked at the same time are each detected and timed by it, and
    /// stopping the group ends the thread.
    @Test func aGroupOfEightLoopsHasOneWatchdogAndOneWatcherThreadThatTimeTwoLoopsBlockedAtOnce() throws {
        // The threads of the tests before end once their monitors stopped; one that returned may
        // be listed a moment longer (a test beside a busy CPU once counted it, and then none more).
        _ = Eventually.holds { Self.threads(named: "hangwatch-wdog") == 0 && Self.threads(named: "hangwatch-loop") == 0 }
        let watchdogsBefore = Self.threads(named: "hangwatch-wdog")
        let watchersBefore = Self.threads(named: "hangwatch-loop")
        let policy = BlockingPolicy(spacingNanoseconds: 900_000_000)
        let server = try WatchedServer("eight", loops: 8, policy: policy, acceptsOnItsOwnLoop: true) { $0.repeatWindow = .zero }
        defer { server.close() }
        let (directory, watch, port) = (server.directory, server.watch, server.port)
        #expect(Eventually.holds(timeout: 10) {
            _ = Self.get(port, "/")
            return watch.monitors.allSatisfy(\.isAttached) && watch.watchesEventLoopsExactly
        })
        // The process's one watchdog (shared with any monitor still running), one watcher more.
        #expect(Self.threads(named: "hangwatch-wdog") == 1)
        #expect(Self.threads(named: "hangwatch-loop") == watchersBefore + 1)

        // Two connections at once, from two threads of their own: the group hands them to two
        // different loops (the server accepts on a loop of its own: a loop that accepted, blocked by
        // the first request, would accept the second only after it), whose handlers meet before
        // they block, so both loops are blocked at once.
        let answered = Mutex(0)
        let clients = DispatchGroup()
        for _ in 0..<2 {
            clients.enter()
            Thread {
                if Self.get(port, "/together") { answered.withLock { $0 += 1 } }
                clients.leave()
            }.start()
        }
        clients.wait()
        #expect(answered.withLock { $0 } == 2)
        let blocks = policy.togetherBlocks.withLock { $0 }
        if blocks.count == 2, !blocks.allSatisfy(\.metPartner) {
            try ControlCheck.cannotRun("the two requests reached their loops more than 5 s apart: \(blocks)")
        }
        try #require(blocks.count == 2 && Set(blocks.map(\.tid)).count == 2, "\(blocks)")
        let reports = ReportDirectory(path: directory).waitForFinished(2)
        try #require(reports.count == 2, "\(reports.map(\.id))")
        #expect(Set(reports.map(\.thread.name)).count == 2, "\(reports.map(\.thread.name))")
        for report in reports {
            let block = try #require(blocks.first { $0.tid == report.thread.tid }, "a report of a thread that did not block: \(report.thread)")
            // The hang is at least the block as the handler timed it (it began at the loop's wake,
            // before the handler ran), and ends when the loop next answers.
            let slack = report.edges == "sampled" ? 25.0 : 0
            #expect(
                report.durationMs >= block.milliseconds - 5 - slack && report.durationMs <= block.milliseconds + 15 + slack + Self.cpuWaitSlack,
                "\(report.edges ?? "-"): \(report.durationMs) ms for a block of \(block.milliseconds) ms")
            let detection = report.detectedAt.timeIntervalSince(report.startedAt) * 1000
            #expect(detection >= 100 && detection <= 100 + 2 * 50, "detected \(detection) ms after the start")
        }
        // The two hangs overlap as the blocks did, and neither detection waited for the other hang to end.
        let (first, second) = (reports[0], reports[1])
        let (firstEnd, secondEnd) = (try #require(first.endedAt), try #require(second.endedAt))
        #expect(first.startedAt < secondEnd && second.startedAt < firstEnd)
        #expect(first.detectedAt < secondEnd && second.detectedAt < firstEnd)
        watch.stop()
        #expect(Eventually.holds {
            Self.threads(named: "hangwatch-wdog") == watchdogsBefore && Self.threads(named: "hangwatch-loop") == watchersBefore
        })
    }

    /// Blocks that begin long after their loop went idle, each reported. Nested in the watcher's
    /// instance, a wake of an idle loop can be lost (the nested wait checks the loop's instance
    /// for a ready event after the wake, and the loop may have consumed it first): the looks at an
    /// idle loop then find it (blocks more than a second after the loop went idle: past the
    /// looks' first second, which was all there was once; a server like this then lost 5 to 7 of
    /// 40 such requests).
    @Test func blocksArrivingLongAfterTheLoopWentIdleAreEachReportedWithNestedInstancesAndLooks() throws {
        try sparseBlocks(usesIoUring: false) { watch, reports in
            #expect(!watch.watchesWakesThroughIoUring)
            #expect(reports.allSatisfy { $0.edges == "exact" || $0.edges == "sampled" })
        }
    }

    /// Polled through io_uring, no wake is lost, and there are no looks at idle loops: every block
    /// is reported, and every report's start is the loop's wake (`exact`; a look would say
    /// `sampled`, and a lost wake would be a missed hang).
    @Test(.enabled(if: HangMonitor.canPollLoopWakesThroughIoUring, "io_uring is not available on this machine"))
    func blocksArrivingLongAfterTheLoopWentIdleAreEachReportedFromTheirWakeThroughIoUring() throws {
        try sparseBlocks(usesIoUring: true) { watch, reports in
            #expect(watch.watchesWakesThroughIoUring)
            #expect(reports.allSatisfy { $0.edges == "exact" }, "\(reports.map { $0.edges ?? "-" })")
        }
    }

    /// The group's start says how idle loops' wakes are watched, and why not through io_uring when
    /// not: an operator can tell whether a wake can be lost. It also says what dates busy loops
    /// under load (here the io_uring case's group is made with `EventLoopTicks`, the other not).
    @Test(arguments: [false, true]) func theStartSaysHowIdleLoopsWakesAreWatchedAndBusyOnesDated(_ usesIoUring: Bool) throws {
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-nio-log-\(getpid())-\(usesIoUring)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ticks = usesIoUring ? EventLoopTicks() : nil
        let group = ticks.map { MultiThreadedEventLoopGroup(numberOfThreads: 2, metricsDelegate: $0) }
            ?? MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        var configuration = HangMonitor.Configuration(serviceName: "api", threshold: .milliseconds(100), reportDirectory: directory)
        configuration.watchesConcurrencyPool = false
        configuration.usesIoUring = usesIoUring
        let log = LogRecorder()
        let watch = try HangMonitor.watch(group, ticks: ticks, configuration: configuration, logger: log.logger)
        watch.stop()
        let started = log.all.filter { $0.message.hasPrefix("event loops watched: 2, by the process's watchdog and loop watcher threads; ") }
        try #require(started.count == 1, "\(log.all.map(\.message))")
        let message = started[0].message
        let dated = usesIoUring ? "under load dated by the loops' iterations (EventLoopTicks); " : "under load dated by a ping at each look; "
        #expect(message.contains(dated), "\(message)")
        if !usesIoUring {
            #expect(message.hasSuffix("io_uring off by configuration (HANGWATCH_IO_URING=no)"), "\(message)")
        } else if HangMonitor.canPollLoopWakesThroughIoUring {
            #expect(message.hasSuffix("idle loops' wakes through io_uring (never lost)"), "\(message)")
        } else {
            #expect(message.contains("io_uring unavailable: io_uring_setup"), "\(message)")
        }
    }

    /// Ten blocking requests 1.2 s apart (new connections), each a hang of its own.
    func sparseBlocks(usesIoUring: Bool, check: (EventLoopGroupMonitor, [HangReport]) -> Void) throws {
        let server = try WatchedServer("sparse-\(usesIoUring)") {
            $0.repeatWindow = .zero
            $0.reportBurst = 20
            $0.usesIoUring = usesIoUring
        }
        defer { server.close() }
        let (directory, watch, port) = (server.directory, server.watch, server.port)
        #expect(Eventually.holds { watch.watchesEventLoopsExactly })
        let requests = 10
        for _ in 0..<requests {
            // (The scenario itself: the loops idle for longer than a second.)
            Thread.sleep(forTimeInterval: 1.2)
            #expect(Self.get(port, "/block"))
        }
        #expect(Eventually.holds { watch.hangsDetected == requests }, "detected \(watch.hangsDetected) of \(requests)")
        let reports = ReportDirectory(path: directory).waitForFinished(requests)
        #expect(reports.count == requests)
        check(watch, reports)
    }

    /// The loops' own epoll instances are watched: a block is reported from the loop's wake to
    /// the end of the handler (within 5 %), detected a threshold after it began (plus at most two
    /// sample intervals), and the report says its edges are exact (or sampled, to a quarter
    /// threshold, when the wake was found by the idle loop's look).
    @Test func aBlockedLoopIsReportedWithExactEdgesAndDetectedOneThresholdIn() throws {
        let server = try WatchedServer("exact") { $0.repeatWindow = .zero }
        defer { server.close() }
        let (directory, watch, port) = (server.directory, server.watch, server.port)
        // Quick requests until both loops have been seen waiting (their epoll instances learnt).
        #expect(Eventually.holds(timeout: 10) {
            _ = Self.get(port, "/")
            return watch.monitors.allSatisfy(\.isAttached) && watch.watchesEventLoopsExactly
        })
        for _ in 0..<3 { #expect(Self.get(port, "/block")) }
        let reports = ReportDirectory(path: directory).waitForFinished(3)
        #expect(reports.count == 3, "\(reports.map(\.id))")
        for report in reports {
            // The handler sleeps 300 ms (plus what the rest of its read takes). A wake the watcher
            // found by looking at the idle loop (docs/sources.md: a lost wake) says so, and its
            // start is known to a quarter threshold.
            #expect(report.edges == "exact" || report.edges == "sampled")
            let slack = report.edges == "sampled" ? 25.0 : 0
            #expect(report.durationMs >= 295 - slack && report.durationMs <= 315 + slack + Self.cpuWaitSlack, "\(report.edges ?? "-"): \(report.durationMs)")
            let detection = report.detectedAt.timeIntervalSince(report.startedAt) * 1000
            #expect(detection >= 100 && detection <= 100 + 2 * 50, "detected \(detection) ms after the start")
            #expect(report.heaviestStackContains("lookUpCustomerSynchronously"), "\(report.heaviestSymbols)")
        }
    }

    /// Under load from `wrk` (Debian's package) on loopback, requests that block their loop now and
    /// then are each reported with the blocking function.
    @Test func underLoadEveryBlockingRequestIsReported() throws {
        try underLoad(ticks: false) { _ in }
    }

    /// The same with the group made with `EventLoopTicks`: the loop's iterations date each block
    /// (no pings on the loop before a hang), so every report is exact and lasts the handler's
    /// 300 ms (within 5 %), never less: its start is an iteration's end before the block, its end
    /// the ping's answer after it, both on the fine clock (on the coarse one the end read up to a
    /// tick early: 295 ms).
    @Test func underLoadWithTheLoopsIterationsEveryBlockIsTimedExactly() throws {
        try underLoad(ticks: true) { report in
            #expect(report.edges == "exact")
            #expect(report.durationMs >= 299.5 && report.durationMs <= 315 + Self.cpuWaitSlack, "\(report.durationMs)")
            let detection = report.detectedAt.timeIntervalSince(report.startedAt) * 1000
            #expect(detection >= 100 && detection <= 100 + 2 * 50, "detected \(detection) ms after the start")
        }
    }

    /// With `EventLoopTicks`, a loop that slept after an iteration and then blocked is dated from
    /// the first look that found it in its wait, not from the iteration before the sleep. Scripted
    /// against the watcher's grid (threshold 1 s: a look every 40 ms): quick tasks until 10 ms past
    /// a look, the loop asleep through the next look (its last iteration 30 ms old then, read and
    /// found in its wait), a 1.2 s block 10 ms after that look. Dated from that look, the report is
    /// about 10 ms long; dated from the iteration before the sleep, 40 ms.
    @Test func aBlockAfterASleepIsDatedFromTheLookThatSawTheSleep() throws {
        let server = try WatchedServer("sleep-then-block", loops: 1, ticks: true) { $0.threshold = .seconds(1) }
        defer { server.close() }
        let loop = server.group.next()
        #expect(Eventually.holds(timeout: 10) {
            loop.execute {}
            return server.watch.monitors.allSatisfy(\.isAttached) && server.watch.watchesEventLoopsExactly
        })
        func iterate(until deadline: UInt64) {
            while clockNanoseconds() < deadline {
                loop.execute {}
                usleep(1_000)
            }
        }
        let interval: UInt64 = 40_000_000
        // Quick tasks for a while, then up to 10 ms past a look of the grid (the look itself
        // comes up to a few ms after its instant: the coarse clock lags).
        let look = (clockNanoseconds(CLOCK_MONOTONIC_COARSE) / interval + 4) * interval
        iterate(until: look + 10_000_000)
        // Asleep through the next look (at `look + interval`), then the block, 10 ms after it.
        while clockNanoseconds() < look + interval + 10_000_000 { usleep(500) }
        let measured = Mutex<(UInt64, UInt64)>((0, 0))
        loop.execute {
            let start = clockNanoseconds()
            lookUpCustomerSynchronously(milliseconds: 1_200)
            measured.withLock { $0 = (start, clockNanoseconds()) }
        }
        let reports = ReportDirectory(path: server.directory).waitForFinished(1)
        try #require(reports.count == 1)
        let (start, end) = measured.withLock { $0 }
        let blocked = Double(end - start) / 1e6
        #expect(start > look + interval + 5_000_000, "the block began \(Double(Int64(start) - Int64(look + interval)) / 1e6) ms after the look")
        #expect(reports[0].edges == "exact")
        let early = reports[0].durationMs - blocked
        #expect(early >= -5 && early <= 25, "reported \(reports[0].durationMs) ms for \(blocked) ms blocked")
    }

    func underLoad(ticks: Bool, check: (HangReport) -> Void) throws {
        let wrk = "/usr/bin/wrk"
        try #require(FileManager.default.isExecutableFile(atPath: wrk), "\(wrk) is missing: apt-get install wrk (make test-deps)")
        let policy = BlockingPolicy(spacingNanoseconds: 900_000_000)
        let server = try WatchedServer("load", loops: 1, policy: policy, ticks: ticks) { $0.repeatWindow = .zero; $0.reportBurst = 100 }
        defer { server.close() }
        let (directory, watch, port) = (server.directory, server.watch, server.port)
        if ticks {
            // Quick requests until the loop's epoll instance is learnt (exact edges).
            #expect(Eventually.holds(timeout: 10) {
                _ = Self.get(port, "/")
                return watch.monitors.allSatisfy(\.isAttached) && watch.watchesEventLoopsExactly
            })
        }

        let load = Process()
        load.executableURL = URL(fileURLWithPath: wrk)
        load.arguments = ["-t1", "-c8", "-d4s", "http://127.0.0.1:\(port)/sometimes"]
        let output = Pipe()
        load.standardOutput = output
        load.standardError = output
        try load.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        load.waitUntilExit()
        #expect(load.terminationStatus == 0, "\(text)")
        let blocked = policy.blocked.withLock { $0 }
        #expect(blocked >= 3, "\(text)")
        let reports = ReportDirectory(path: directory).waitForFinished(blocked)
        #expect(reports.count == blocked, "\(blocked) blocking requests, \(reports.count) reports")
        for report in reports {
            let symbols = report.heaviestStack?.frames.compactMap(\.symbol) ?? []
            #expect(symbols.contains { $0.contains("lookUpCustomerSynchronously") }, "\(symbols)")
            check(report)
        }
    }
}
