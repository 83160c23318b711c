import Foundation
import HangWatch
import HangWatchNIO
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Throughput of a SwiftNIO HTTP server (one event loop) under one continuous `wrk` run on
/// loopback, its loop watched by HangWatchNIO (threshold 100 ms) and unwatched in alternating
/// windows; the server counts the requests it answers in each window. Adjacent windows make a
/// pair (their order alternates), and the figure is the median of the pairs' ratios. On a VM whose
/// CPUs the host shares, separate runs of a few seconds each differ by ±15 % (seen 2026-12-07:
/// 52,000 to 77,000 requests/s in either arm); adjacent half-second windows of one run share that
/// drift. Nothing blocks: this is the watching's own cost, starting and stopping excluded (each
/// window begins `settle` after the switch).
struct NIOFigure {
    var pairs: Int
    var window: Double = 0.5
    var settle: Double = 0.15

    final class Handler: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let answered: Counter
        init(answered: Counter) { self.answered = answered }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .head(let head) = unwrapInboundIn(data) else { return }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "3")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: "ok\n")))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            answered.value.add(1, ordering: .relaxed)
        }
    }

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    struct Measured {
        var unwatched: Double
        var watched: Double
        var ratio: Double
        /// Every pair's ratio, in the order measured.
        var ratios: [Double]
        /// Requests per second wrk itself reported over the whole run (both arms).
        var wrkRate: Double
        /// The loop and wrk ran on CPUs of their own.
        var pinned: Bool
    }

    /// nil when wrk is not installed.
    func measure() throws -> Measured? {
        let wrk = "/usr/bin/wrk"
        guard FileManager.default.isExecutableFile(atPath: wrk) else { return nil }
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid())-nio"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let answered = Counter()
        let channel = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(Handler(answered: answered)) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        defer { try? channel.close().wait() }
        let port = channel.localAddress?.port ?? 0

        // One wrk run spans every window, a second of warm-up and a second to spare.
        let seconds = Int((Double(pairs) * 2 * (window + settle)).rounded(.up)) + 2
        let load = Process()
        // The loop on CPU 0 and wrk on CPU 1, as a load generator runs on cores of its own: left to
        // the scheduler, the two shared a CPU in some windows and not in others, and the medians
        // of four runs read 0.951-1.004; pinned, ten read 0.989-1.041 (2026-12-07). HangWatch's
        // threads stay free to run on either.
        let pinned = ProcessInfo.processInfo.activeProcessorCount >= 2 && FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset")
        if pinned {
            let loopThread = try group.next().submit { ProcessThreads.currentThreadID() }.wait()
            ProcessThreads.pin(loopThread, to: 0)
        }
        load.executableURL = URL(fileURLWithPath: pinned ? "/usr/bin/taskset" : wrk)
        load.arguments = (pinned ? ["-c", "1", wrk] : []) + ["-t1", "-c16", "-d\(seconds)s", "http://127.0.0.1:\(port)/"]
        let output = Pipe()
        load.standardOutput = output
        load.standardError = output
        try load.run()
        usleep(1_000_000)

        func rate(watched: Bool) throws -> Double {
            let watch = watched
                ? try HangMonitor.watch(
                    group, configuration: HangMonitor.Configuration(serviceName: "bench", threshold: .milliseconds(100), reportDirectory: directory))
                : nil
            defer { watch?.stop() }
            usleep(useconds_t(settle * 1_000_000))
            let start = ContinuousClock.now
            let before = answered.value.load(ordering: .relaxed)
            usleep(useconds_t(window * 1_000_000))
            let count = answered.value.load(ordering: .relaxed) - before
            let elapsed = start.duration(to: .now)
            return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        var bare: [Double] = [], watched: [Double] = [], ratios: [Double] = []
        for pair in 0..<pairs {
            let a: Double, b: Double
            if pair % 2 == 0 {
                a = try rate(watched: false)
                b = try rate(watched: true)
            } else {
                b = try rate(watched: true)
                a = try rate(watched: false)
            }
            bare.append(a)
            watched.append(b)
            ratios.append(b / a)
        }
        // wrk prints a few hundred bytes, well within the pipe's buffer, at its end.
        load.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let line = text.split(separator: "\n").first { $0.hasPrefix("Requests/sec:") } ?? ""
        let wrkRate = Double(line.split(separator: " ").last ?? "") ?? .nan
        return Measured(
            unwatched: Statistics.median(bare), watched: Statistics.median(watched), ratio: Statistics.median(ratios), ratios: ratios,
            wrkRate: wrkRate, pinned: pinned)
    }
}

/// A SwiftNIO group of `loops` loops at rest, unwatched and watched (the loops only: the pool
/// watch off, it has figure 15): the process's voluntary context switches and CPU time over
/// `seconds`, and the monitor's threads. The watched loops' epoll instances are watched, so an idle
/// loop should cost nothing once past its first minute idle (`atRest`); within that minute
/// (`window`, measured from 2.5 s after the start) each idle loop is looked at every half
/// threshold, at instants shared by the whole group.
struct NIOIdleFigure {
    var seconds: Double
    var loops: Int

    struct Phase {
        var contextSwitches: Int
        var cpuMilliseconds: Double
    }

    struct Measured {
        var window: Phase
        var atRest: Phase
        var exact: Bool
        /// Idle loops' wakes came through an io_uring (no looks at idle loops).
        var ring: Bool
        /// Threads of this process named `hangwatch-*` while watched.
        var monitorThreads: Int
    }

    /// Threads of this process whose name begins with `prefix`.
    static func threads(prefixed prefix: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { tid in
            (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?.hasPrefix(prefix) == true
        }.count
    }

    private func phase(_ seconds: Double) -> Phase {
        var before = rusage()
        getrusage(RUSAGE_SELF.rawValue, &before)
        usleep(useconds_t(seconds * 1_000_000))
        var after = rusage()
        getrusage(RUSAGE_SELF.rawValue, &after)
        func milliseconds(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
        return Phase(
            contextSwitches: after.ru_nvcsw - before.ru_nvcsw,
            cpuMilliseconds: milliseconds(after.ru_utime) + milliseconds(after.ru_stime) - milliseconds(before.ru_utime)
                - milliseconds(before.ru_stime))
    }

    func measure(watched: Bool) throws -> Measured {
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid())-nio-idle"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: loops)
        defer { try? group.syncShutdownGracefully() }
        let threadsBefore = Self.threads(prefixed: "hangwatch")
        var watch: EventLoopGroupMonitor?
        if watched {
            var configuration = HangMonitor.Configuration(serviceName: "bench", threshold: .milliseconds(250), reportDirectory: directory)
            configuration.watchesConcurrencyPool = false
            watch = try HangMonitor.watch(group, configuration: configuration)
        }
        defer { watch?.stop() }
        // Settle: each loop attached and seen waiting.
        usleep(2_500_000)
        let window = phase(seconds)
        // Past each loop's first minute idle (in which it is also looked at: docs/sources.md).
        if watched { usleep(useconds_t(max(0, 62 - 2.5 - seconds) * 1_000_000)) }
        let atRest = phase(seconds)
        return Measured(
            window: window, atRest: atRest, exact: watch?.watchesEventLoopsExactly ?? false,
            ring: watch?.watchesWakesThroughIoUring ?? false,
            monitorThreads: Self.threads(prefixed: "hangwatch") - threadsBefore)
    }
}

/// The cost of `EventLoopTicks` on the loops themselves, per loop iteration: what SwiftNIO adds
/// once a metrics delegate is set (two `NIODeadline.now()`, timed here) and the delegate's call
/// (`processedTick`, timed with an iteration's real information, its loop followed). A task
/// handed between two loops costs about 23 µs per iteration on this machine, too noisy to show
/// a fraction of a microsecond, so the parts are timed one by one.
struct LoopTicksFigure {
    var calls: Int

    /// Keeps the information of the last iteration it is given.
    private final class Keeper: NIOEventLoopMetricsDelegate, Sendable {
        let info = Mutex<NIOEventLoopTickInfo?>(nil)
        func processedTick(info: NIOEventLoopTickInfo) { self.info.withLock { $0 = info } }
    }

    /// Nanoseconds: one `NIODeadline.now()`, one `processedTick`, and their sum per iteration.
    func measure() throws -> (clock: Double, call: Double, perIteration: Double) {
        let keeper = Keeper()
        let ticks = EventLoopTicks(forwardingTo: keeper)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: ticks)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        _ = ticks.slot(for: loop)
        // (The delegate hears of an iteration after its tasks ran: after `wait()` returns.)
        var reported: NIOEventLoopTickInfo?
        for _ in 0..<1000 where reported == nil {
            try loop.submit {}.wait()
            usleep(1000)
            reported = keeper.info.withLock { $0 }
        }
        guard let info = reported else { throw BenchError.setup("no loop iteration was reported") }
        let alone = EventLoopTicks()  // followed loop, no forwarding: as a service has it
        _ = alone.slot(for: loop)

        func nanoseconds(_ body: () -> Void) -> Double {
            var best = Double.infinity
            for _ in 0..<5 {
                let start = DispatchTime.now().uptimeNanoseconds
                body()
                best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / Double(calls))
            }
            return best
        }
        var sink: UInt64 = 0
        let clock = nanoseconds { for _ in 0..<calls { sink &+= NIODeadline.now().uptimeNanoseconds } }
        let call = nanoseconds { for _ in 0..<calls { alone.processedTick(info: info) } }
        if sink == 42 { print("") }  // (keeps the clock reads)
        return (clock, call, 2 * clock + call)
    }
}
