import Foundation
import HangWatch
import HangWatchNIO
import NIOCore
import NIOHTTP1
import NIOPosix

/// Throughput of a SwiftNIO HTTP server (one event loop) under `wrk` on loopback, with its loop
/// unwatched and watched by HangWatchNIO (threshold 100 ms), alternating in every round; median
/// of per-round ratios of requests per second. Nothing blocks: this is the watching's own cost.
struct NIOFigure {
    var rounds: Int
    var seconds: Int

    final class Handler: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .head(let head) = unwrapInboundIn(data) else { return }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "3")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: "ok\n")))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    /// nil when wrk is not installed.
    func measure() throws -> (unwatched: Double, watched: Double, ratio: Double)? {
        let wrk = "/usr/bin/wrk"
        guard FileManager.default.isExecutableFile(atPath: wrk) else { return nil }
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid())-nio"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let channel = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(Handler()) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        defer { try? channel.close().wait() }
        let port = channel.localAddress?.port ?? 0

        func requestsPerSecond() throws -> Double {
            let load = Process()
            load.executableURL = URL(fileURLWithPath: wrk)
            load.arguments = ["-t1", "-c16", "-d\(seconds)s", "http://127.0.0.1:\(port)/"]
            let output = Pipe()
            load.standardOutput = output
            load.standardError = output
            try load.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            load.waitUntilExit()
            let line = text.split(separator: "\n").first { $0.hasPrefix("Requests/sec:") } ?? ""
            return Double(line.split(separator: " ").last ?? "") ?? .nan
        }
        func watchedRun() throws -> Double {
            let watch = try HangMonitor.watch(
                group, configuration: HangMonitor.Configuration(serviceName: "bench", threshold: .milliseconds(100), reportDirectory: directory))
            defer { watch.stop() }
            return try requestsPerSecond()
        }
        _ = try requestsPerSecond()
        var bare: [Double] = [], watched: [Double] = [], ratios: [Double] = []
        for round in 0..<rounds {
            let a: Double, b: Double
            if round % 2 == 0 {
                a = try requestsPerSecond()
                b = try watchedRun()
            } else {
                b = try watchedRun()
                a = try requestsPerSecond()
            }
            bare.append(a)
            watched.append(b)
            ratios.append(b / a)
        }
        return (Statistics.median(bare), Statistics.median(watched), Statistics.median(ratios))
    }
}

/// A SwiftNIO group of two loops at rest for `seconds`, unwatched and watched (the loops only: the
/// pool watch off, it has figure 15): the process's voluntary context switches and CPU time. The
/// watched loops' epoll instances are watched, so an idle loop should cost nothing.
struct NIOIdleFigure {
    var seconds: Double

    func measure(watched: Bool) throws -> (contextSwitches: Int, cpuMilliseconds: Double, exact: Bool) {
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid())-nio-idle"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        var watch: EventLoopGroupMonitor?
        if watched {
            var configuration = HangMonitor.Configuration(serviceName: "bench", threshold: .milliseconds(250), reportDirectory: directory)
            configuration.watchesConcurrencyPool = false
            watch = try HangMonitor.watch(group, configuration: configuration)
        }
        defer { watch?.stop() }
        // Settle: each loop attached and seen waiting, and past its first minute idle (in which a
        // loop is also looked at every half threshold: docs/sources.md).
        usleep(watched ? 62_000_000 : 2_500_000)
        var before = rusage()
        getrusage(RUSAGE_SELF.rawValue, &before)
        usleep(useconds_t(seconds * 1_000_000))
        var after = rusage()
        getrusage(RUSAGE_SELF.rawValue, &after)
        func milliseconds(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
        return (
            after.ru_nvcsw - before.ru_nvcsw,
            milliseconds(after.ru_utime) + milliseconds(after.ru_stime) - milliseconds(before.ru_utime) - milliseconds(before.ru_stime),
            watch?.watchesEventLoopsExactly ?? false
        )
    }
}
