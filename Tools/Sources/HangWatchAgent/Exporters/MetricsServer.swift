import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The Prometheus scrape endpoint: `GET /metrics` (text exposition 0.0.4), `GET /` a pointer to
/// it, anything else 404/405. One small event loop; a scrape renders the registry (under its
/// lock) and never touches the spool.
final class MetricsServer: Sendable {
    let address: AgentConfiguration.ListenAddress
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    /// Binds at once (so a taken port fails the start, with the address in the error), and only
    /// then says it listens. `render` makes a scrape's body.
    init(address: AgentConfiguration.ListenAddress, logger: Logger, render: @escaping @Sendable () -> [UInt8]) throws {
        self.address = address
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(MetricsHandler(render: render))
                }
            }
        do {
            channel = try bootstrap.bind(host: address.host, port: address.port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw BindError(address: address, reason: "\(error)")
        }
        self.group = group
        var bound = address
        bound.port = channel.localAddress?.port ?? address.port
        logger.info("metrics endpoint listening", metadata: ["hangwatch.address": "http://\(bound)/metrics"])
    }

    /// The port actually bound (differs from the configured one when that was 0, in tests).
    var boundPort: Int { channel.localAddress?.port ?? address.port }

    func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    struct BindError: Error, CustomStringConvertible {
        var address: AgentConfiguration.ListenAddress
        var reason: String
        var description: String { "cannot listen on \(address) for metrics (HANGWATCHD_METRICS_LISTEN): \(reason)" }
    }
}

private final class MetricsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let render: @Sendable () -> [UInt8]
    private var request: HTTPRequestHead?

    init(render: @escaping @Sendable () -> [UInt8]) {
        self.render = render
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let status: HTTPResponseStatus
        var contentType = "text/plain; charset=utf-8"
        var body: [UInt8]
        switch (head.method, path) {
        case (.GET, "/metrics"), (.HEAD, "/metrics"):
            status = .ok
            contentType = "text/plain; version=0.0.4; charset=utf-8"
            body = render()
        case (.GET, "/"), (.HEAD, "/"):
            status = .ok
            body = Array("hangwatchd: metrics at /metrics\n".utf8)
        case (_, "/metrics"), (_, "/"):
            status = .methodNotAllowed
            body = Array("only GET and HEAD\n".utf8)
        default:
            status = .notFound
            body = Array("not found; metrics are at /metrics\n".utf8)
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: "\(body.count)")
        if status == .methodNotAllowed { headers.add(name: "Allow", value: "GET, HEAD") }
        let keepAlive = head.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }
}
