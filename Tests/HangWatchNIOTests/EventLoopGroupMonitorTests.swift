import Foundation
import HangWatch
import HangWatchNIO
import HangWatchReport
import HangWatchSymbolication
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Blocks the calling event loop: what a handler must never do (a blocking call in disguise).
@inline(never)
func lookUpCustomerSynchronously(milliseconds: Int) {
    usleep(useconds_t(milliseconds * 1000))
}

/// `GET /` answers at once; `GET /block` blocks its event loop for 300 ms first.
final class TestHTTPHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        if head.uri == "/block" { lookUpCustomerSynchronously(milliseconds: 300) }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "3")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: "ok\n")))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

@Suite(.serialized) struct EventLoopGroupMonitorTests {
    static func reports(_ directory: String) -> [HangReport] {
        let symbolicator = Symbolicator()
        return ((try? ReportStore(directory: directory).list()) ?? []).compactMap { try? ReportReader().read(path: $0.path) }.map {
            var report = $0
            symbolicator.symbolicate(&report)
            return report
        }
    }

    static func get(_ port: Int, _ path: String) -> Bool {
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else { return false }
        return (try? Data(contentsOf: url)) != nil
    }

    @Test func everyRequestThatBlocksItsLoopIsReportedWithTheBlockingFunction() throws {
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-nio-\(getpid())-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        var configuration = HangMonitor.Configuration(serviceName: "api", threshold: .milliseconds(100), reportDirectory: directory)
        configuration.repeatWindow = .zero
        let watch = try HangMonitor.watch(group, configuration: configuration)
        defer { watch.stop() }
        #expect(watch.monitors.count == 2)
        let channel = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(TestHTTPHandler()) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        defer { try? channel.close().wait() }
        let port = try #require(channel.localAddress?.port)

        // Warm up (every loop runs its first ping), then quick requests: no hangs.
        usleep(300_000)
        for _ in 0..<30 { #expect(Self.get(port, "/")) }
        usleep(300_000)
        #expect(Self.reports(directory).isEmpty)

        // Two blocking requests, one after the other.
        for _ in 0..<2 {
            #expect(Self.get(port, "/block"))
            usleep(400_000)
        }
        let deadline = Date().addingTimeInterval(10)
        var reports = Self.reports(directory)
        while (reports.count < 2 || reports.contains { $0.outcome == .ongoing }) && Date() < deadline {
            usleep(50_000)
            reports = Self.reports(directory)
        }
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
}
