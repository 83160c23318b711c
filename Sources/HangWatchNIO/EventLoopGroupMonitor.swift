import HangWatch
import Logging
import NIOCore

/// Every event loop of a SwiftNIO group, watched: one `HangMonitor` per loop, each pinging its
/// loop with `execute` once per threshold. A loop that does not run the ping within the threshold
/// is blocked (one blocking call stalls every connection on it): its thread is captured and the
/// report names it (`thread.name`, e.g. `NIO-ELT-0-#3`), with `source` `nio-eventloop`.
///
/// ```swift
/// let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
/// let watch = try HangMonitor.watch(group, configuration: .init(serviceName: "api", threshold: .milliseconds(100),
///                                                              reportDirectory: "/var/lib/hangwatch/reports/api"))
/// // ... run the server ...
/// watch.stop()
/// ```
///
/// What the ping can see, and its cost: docs/sources.md.
public final class EventLoopGroupMonitor: Sendable {
    /// One monitor per loop, in the group's order.
    public let monitors: [HangMonitor]

    init(monitors: [HangMonitor]) {
        self.monitors = monitors
    }

    /// Stops every loop's monitor (a hang in progress is written as `monitor stopped during hang`).
    public func stop() {
        for monitor in monitors { monitor.stop() }
    }

    /// Whether every loop's epoll instance is watched (exact edges) rather than pinged: true once
    /// each loop was seen waiting in `epoll_wait` (its first idle moment after the start).
    public var watchesEventLoopsExactly: Bool { monitors.allSatisfy { $0.sourceEdges == "exact" } }

    /// Hangs detected on all loops.
    public var hangsDetected: Int { monitors.reduce(0) { $0 + $1.statistics.hangsDetected } }
}

extension HangMonitor {
    /// Watches every event loop of `group` with `configuration` (all loops share the service
    /// name, directory and threshold). Only the first loop's monitor keeps the heartbeat file
    /// (there is one per process).
    public static func watch(
        _ group: any EventLoopGroup, configuration: Configuration, logger: Logger = Logger(label: "hangwatch")
    ) throws -> EventLoopGroupMonitor {
        var monitors: [HangMonitor] = []
        do {
            for (index, loop) in group.makeIterator().enumerated() {
                var perLoop = configuration
                if index > 0 { perLoop.heartbeatInterval = .zero }
                let monitor = try HangMonitor(configuration: perLoop, logger: logger)
                try monitor.startPinging(eventLoop: { block in loop.execute(block) })
                monitors.append(monitor)
            }
        } catch {
            for monitor in monitors { monitor.stop() }
            throw error
        }
        return EventLoopGroupMonitor(monitors: monitors)
    }
}
