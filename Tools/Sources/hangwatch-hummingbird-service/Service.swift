import ArgumentParser
import Foundation
import HangWatch
import HangWatchNIO
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceHarness
import Synchronization

/// A Hummingbird 2 shop whose routes block their thread for 300 ms in four ways, as a service
/// would by mistake: `/quote` computes, `/invoice` reads a pipe, `/checkout` sleeps, `/cart` waits
/// for a lock. Hummingbird runs route handlers as Swift tasks on the cooperative pool; `/receipt`
/// instead blocks an event loop of the server's group. `/restock` holds the stock's `NIOLock` for
/// 800 ms and `/stock` waits for it (`Inventory`: one request's handler blocked by another's).
/// `/orders/:id/wait` is a long poll: its task waits on a continuation until `/orders/release`
/// (`/orders/waiting` counts them), for `hangwatch dump --tasks`.
/// `/report` asks an upstream TCP service (`--upstream-port`, on 127.0.0.1) synchronously, on its
/// pool thread. `/layout` blocks the MainActor for 400 ms (`Storefront`). `/hello` answers at once
/// (throughput). The
/// shop's routes run under `HangLabelsMiddleware` (each hang's report names its route and, when
/// the request had one, its `traceparent`); `/hello` does not (the bench's figure is unchanged).
///
///   hangwatch-hummingbird-service [--reports DIR] [--threshold-ms 250] [--port 8080]
///                                 [--port-file FILE] [--measurements FILE] [--toggle-watch]
///                                 [--no-loop-ticks] [--no-pool-watch] [--upstream-port PORT]
///                                 [--every-hang-reported] [--watch-main-queue]
///
/// With `--reports` the server's group and the cooperative pool are watched (HangWatchNIO); without
/// it nothing is watched (the bench's baseline). With `--toggle-watch` as well (the bench's paired
/// windows), the watch starts off: SIGUSR1 starts it, SIGUSR2 stops it, and `GET /served` answers
/// how many `/hello` requests were answered so far. `GET /watch` says `off`, `ping` (a loop's epoll
/// instance is not learnt yet) or `exact`. SIGTERM or SIGINT stops it gracefully; the monitor
/// stops after the server, so the reports' repeat counts are final. Watched, the group is made
/// with an `EventLoopTicks` delegate (as docs/sources.md advises), unless `--no-loop-ticks` (the
/// default set-up the bench compares: boundaries under load from a ping at each look). `--no-pool-watch`:
/// the loops only (the bench's measure of the pool watch's cost). `--watch-main-queue`: the main
/// queue (the MainActor, `/layout`'s) too, by a monitor of its own writing to the same directory.
@main
struct HummingbirdService: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hangwatch-hummingbird-service", abstract: "A Hummingbird 2 shop whose routes block on purpose, watched.")

    @OptionGroup var common: ServiceOptions

    @Flag(name: .customLong("no-loop-ticks"), help: "Make the group without an EventLoopTicks delegate (a ping at each look under load).")
    var withoutLoopTicks = false

    @Flag(name: .customLong("no-pool-watch"), help: "Watch the event loops only, not the cooperative pool.")
    var withoutPoolWatch = false

    @Option(name: .customLong("upstream-port"), help: "The port of the TCP service on 127.0.0.1 that /report asks, synchronously.")
    var upstreamPort: Int?

    @Flag(name: .customLong("every-hang-reported"), help: "Every hang its own report: no fold of repeats, no rate limit.")
    var everyHangReported = false

    @Flag(name: .customLong("watch-main-queue"), help: "Watch the main queue (the MainActor) too, with --reports.")
    var watchesMainQueue = false

    func validate() throws {
        if let upstreamPort, !(1...65_535).contains(upstreamPort) {
            throw ValidationError("--upstream-port: \(upstreamPort) is not in 1...65535")
        }
    }

    func run() async throws {
        let (common, upstreamPort) = (common, upstreamPort)
        let logger = Logger(label: "shop")
        // The monitor's own log; `SHOP_HANGWATCH_LOG_LEVEL=debug` adds each report opened and each
        // pool job seen for half a threshold or more that got none, with why (the test's evidence).
        let monitorLogger = {
            var logger = Logger(label: "hangwatch")
            logger.logLevel = ProcessInfo.processInfo.environment["SHOP_HANGWATCH_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
            return logger
        }()
        let measurements = try Measurements(path: common.measurements)
        // Watched, the loops report each iteration's end to the monitor (EventLoopTicks).
        let ticks = common.reports != nil && !withoutLoopTicks ? EventLoopTicks() : nil
        let group = ticks.map { MultiThreadedEventLoopGroup(numberOfThreads: 2, metricsDelegate: $0) }
            ?? MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let toggled = WatchToggle()
        var toggleSources: [any DispatchSourceSignal] = []
        var mainQueueMonitor: HangMonitor?
        if let reports = common.reports {
            let configuration = {
                var configuration = HangMonitor.Configuration(
                    serviceName: "shop", threshold: .milliseconds(common.thresholdMilliseconds), reportDirectory: reports)
                configuration.watchesConcurrencyPool = !withoutPoolWatch
                if everyHangReported {
                    // Every hang its own report: no fold of repeats, no rate limit in reach.
                    configuration.repeatWindow = .zero
                    configuration.reportsPerMinute = 10_000
                    configuration.reportBurst = 10_000
                }
                return configuration
            }()
            // The loops, and (on by default, once per process) the cooperative pool.
            toggleSources = try toggled.watch(toggled: common.toggleWatch) {
                try HangMonitor.watch(group, ticks: ticks, configuration: configuration, logger: monitorLogger)
            }
            if watchesMainQueue {
                // The MainActor: one monitor per source, this one's the main queue (docs/sources.md).
                let monitor = try HangMonitor(configuration: configuration, logger: monitorLogger)
                try monitor.startWatchingMainQueue()
                mainQueueMonitor = monitor
            }
        }
        let served = ServedCount()

        let router = Router()
        router.get("/hello") { _, _ in
            served.add()
            return "hello\n"
        }
        router.get("/served") { _, _ in "\(served.value)\n" }
        router.get("/watch") { _, _ in "\(toggled.state)\n" }
        // The shop's routes run under their labels (route, traceparent): a hang says which request.
        let shop = router.group().add(middleware: HangLabelsMiddleware())
        shop.get("/quote") { _, _ in await Shop.quote(measurements: measurements) }
        shop.get("/invoice") { _, _ in try await Shop.downloadInvoice(measurements: measurements) }
        shop.get("/checkout") { _, _ in await Shop.checkout(measurements: measurements) }
        shop.get("/cart") { _, _ in await Shop.updateCart(measurements: measurements) }
        shop.get("/receipt") { _, _ in try await Shop.renderReceipt(on: group.next(), measurements: measurements) }
        shop.get("/restock") { _, _ in await Inventory.restock(measurements: measurements) }
        shop.get("/report") { _, _ in try await Shop.salesReport(upstreamPort: upstreamPort, measurements: measurements) }
        shop.get("/stock") { _, _ in await Inventory.readStock(measurements: measurements) }
        shop.get("/orders/:id/wait") { _, context in await Orders.waitForShipment(order: context.parameters.get("id") ?? "") }
        router.get("/orders/waiting") { _, _ in "\(Orders.waiting.withLock { $0.count })\n" }
        router.get("/orders/release") { _, _ in "\(Orders.release())\n" }
        shop.get("/layout") { _, _ in await Storefront.layoutPage(measurements: measurements) }
        router.get("/restock/held") { _, _ in Inventory.recounting.load(ordering: .acquiring) ? "yes\n" : "no\n" }

        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: common.port), serverName: "shop"),
            onServerRunning: { channel in try? common.announce(port: channel.localAddress?.port) },
            eventLoopGroupProvider: .shared(group),
            logger: logger
        )
        try await app.runService()
        toggled.stop()
        mainQueueMonitor?.stop()
        for source in toggleSources { source.cancel() }
        try await group.shutdownGracefully()
    }
}
