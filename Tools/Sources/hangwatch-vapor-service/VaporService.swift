#if Vapor
import Foundation
import HangWatch
import HangWatchNIO
import ArgumentParser
import ServiceHarness
import Vapor

/// A Vapor 4 store whose synchronous routes block the event loop that runs them for 300 ms
/// (`--block-ms`), as a service would by mistake: `/catalog` reads a pipe, `/cart` waits for a
/// pthread mutex another thread holds, `/throttle` sleeps in a one-line `usleep` wrapper. `/hello`
/// answers at once; `/watch` says how the loops are watched (`off`, `ping`, `exact`).
/// The application's event loops (Vapor's own group) are watched with `HangMonitor.watch`, as a
/// user would: no `EventLoopTicks`, since the framework made the group.
///
///   hangwatch-vapor-service --reports DIR [--threshold-ms 250] [--port 0] [--port-file FILE]
///                           [--measurements FILE] [--block-ms 300] [--toggle-watch]
///
/// Without `--reports` nothing is watched. With `--toggle-watch` as well (the bench's paired
/// windows), the watch starts off: SIGUSR1 starts it, SIGUSR2 stops it, and `GET /served` answers
/// how many `/hello` requests were served.
///
/// SIGTERM or SIGINT stops it gracefully (Vapor's own signal handling); the monitor stops after
/// the server, so the reports' repeat counts are final.
@main
struct VaporService: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hangwatch-vapor-service", abstract: "A Vapor 4 store whose synchronous routes block their event loop, watched.")

    @OptionGroup var common: ServiceOptions

    @ArgumentParser.Option(name: .customLong("block-ms"), help: "How long each blocking route blocks, in milliseconds (1 ... 600000).")
    var blockMilliseconds = 300

    func validate() throws {
        guard (1...600_000).contains(blockMilliseconds) else { throw ValidationError("--block-ms: \(blockMilliseconds) is not in 1...600000") }
    }

    func run() async throws {
        // Vapor reads its command from the arguments: ours are not its, so it gets none (`serve`).
        let app = try await Application.make(Environment(name: "production", arguments: ["hangwatch-vapor-service"]))
        app.http.server.configuration.hostname = "127.0.0.1"
        app.http.server.configuration.port = common.port
        // Vapor logs every request at `info`: under wrk, that is the service's busiest work.
        app.logger.logLevel = .notice
        let watch = WatchToggle()
        var toggleSources: [any DispatchSourceSignal] = []
        if let reports = common.reports {
            let group = app.eventLoopGroup
            let configuration = HangMonitor.Configuration(
                serviceName: "store", threshold: .milliseconds(common.thresholdMilliseconds), reportDirectory: reports)
            toggleSources = try watch.watch(toggled: common.toggleWatch) { try HangMonitor.watch(group, configuration: configuration) }
        }
        defer { for source in toggleSources { source.cancel() } }
        let served = ServedCount()
        routes(
            app, store: Store(measurements: try Measurements(path: common.measurements), blockMilliseconds: blockMilliseconds),
            served: served)
        app.get("served") { _ in "\(served.value)\n" }
        // `off`, or how the loops are watched: `exact` once every loop's epoll instance is watched
        // (each loop seen idle once), `ping` until then.
        app.get("watch") { _ in "\(watch.state)\n" }
        do {
            try await app.startup()
            if let portFile = common.portFile, let port = app.http.server.shared.localAddress?.port {
                // Written whole, then renamed: a reader never sees half a number.
                try Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
            }
            try await app.running?.onStop.get()
        } catch {
            watch.stop()
            try await app.asyncShutdown()
            throw error
        }
        watch.stop()
        try await app.asyncShutdown()
    }
}
#endif
