import HangWatch
import Logging
import NIOCore

/// Every event loop of a SwiftNIO group, watched (as
/// ``HangWatch/HangMonitor/watch(_:ticks:configuration:logger:)`` makes it): one
/// ``/HangWatch/HangMonitor`` per loop, with exact edges from the loop's own epoll instance (pinged
/// until it is learnt). A loop busy past the threshold is blocked (one blocking call stalls every
/// connection on it): its thread is captured and the report names it (`thread.name`, e.g.
/// `NIO-ELT-0-#3`), with `source` `nio-eventloop`. The loops write to one directory, so through its
/// one writer: one rate limit, and the same culprit on two loops is one report with its repeats;
/// its heartbeat speaks for every loop. However many loops, the group costs no thread of its own:
/// the process's one watchdog, and its one watcher of every loop's epoll instance (polled through
/// io_uring where available: ``/HangWatch/HangMonitor/Configuration/usesIoUring``).
///
/// ```swift
/// let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
/// let watch = try HangMonitor.watch(group, configuration: .init(serviceName: "api", threshold: .milliseconds(100),
///                                                              reportDirectory: "/var/lib/hangwatch/reports/api"))
/// // ... run the server ...
/// watch.stop()
/// ```
///
/// What the edges are, and their cost: docs/sources.md.
public final class EventLoopGroupMonitor: Sendable {
    /// One monitor per loop, in the group's order.
    public let monitors: [HangMonitor]

    init(monitors: [HangMonitor]) {
        self.monitors = monitors
    }

    /// Stops every loop's monitor (a hang in progress is written as `monitor stopped during hang`),
    /// waiting for their reports to be written. Idempotent.
    public func stop() {
        for monitor in monitors { monitor.stop() }
    }

    /// Whether every loop's epoll instance is watched (exact edges) rather than pinged: true once
    /// each loop was seen waiting in `epoll_wait` (its first idle moment after the start).
    public var watchesEventLoopsExactly: Bool { monitors.allSatisfy { $0.sourceEdges == "exact" } }

    /// Whether the loops' idle wakes are watched through an io_uring (never lost; an idle loop costs
    /// nothing), rather than through nested epoll instances and looks
    /// (``/HangWatch/HangMonitor/Configuration/usesIoUring``, and io_uring available).
    public var watchesWakesThroughIoUring: Bool { monitors.allSatisfy { $0.loopWakesThroughIoUring == true } }

    /// Hangs detected on all loops.
    public var hangsDetected: Int { monitors.reduce(0) { $0 + $1.statistics.hangsDetected } }

    /// Reports written for the whole group (the loops share one report writer: a culprit that
    /// blocks two loops is one report).
    public var reportsWritten: Int { monitors.reduce(0) { $0 + $1.statistics.reportsWritten } }

    /// Hangs folded into an earlier report as its repeats, for the whole group.
    public var hangsFolded: Int { monitors.reduce(0) { $0 + $1.statistics.hangsFolded } }
}

extension HangMonitor {
    /// Watches every event loop of `group` with one configuration: all loops share the service
    /// name, directory and threshold; the directory's heartbeat speaks for them all.
    ///
    /// With ``/HangWatch/HangMonitor/Configuration/isEnabled`` false, the monitors are made and
    /// none watches.
    ///
    /// - Parameters:
    ///   - group: The loops to watch, each by a monitor of its own, in the group's order.
    ///   - ticks: The ``EventLoopTicks`` the group was made with (its metrics delegate); the loops'
    ///     iterations then date busy stretches under load, with no pings on the loops until a hang
    ///     is declared. Nil: each busy loop is pinged at each look.
    ///   - configuration: What every loop's monitor is made with.
    ///   - logger: Where the monitors tell their starts, stops and troubles.
    /// - Returns: The group's watch; ``EventLoopGroupMonitor/stop()`` ends it.
    /// - Throws: What ``/HangWatch/HangMonitor/init(configuration:logger:enricher:)`` and
    ///   ``/HangWatch/HangMonitor/start()`` throw, for the same reasons; the loops already watched
    ///   are stopped first.
    public static func watch(
        _ group: any EventLoopGroup, ticks: EventLoopTicks? = nil, configuration: Configuration,
        logger: Logger = Logger(label: "hangwatch")
    ) throws -> EventLoopGroupMonitor {
        var monitors: [HangMonitor] = []
        do {
            for loop in group.makeIterator() {
                let monitor = try HangMonitor(configuration: configuration, logger: logger)
                var lastIterationEnd: (@Sendable () -> UInt64?)?
                if let slot = ticks?.slot(for: loop) { lastIterationEnd = { slot.lastEnd } }
                try monitor.startPinging(eventLoop: { block in loop.execute(block) }, lastIterationEnd: lastIterationEnd)
                monitors.append(monitor)
            }
        } catch {
            for monitor in monitors { monitor.stop() }
            throw error
        }
        if configuration.isEnabled, !monitors.isEmpty {
            let method = HangMonitor.loopWakeMethod(usesIoUring: configuration.usesIoUring)
            let boundaries = ticks == nil ? "a ping at each look" : "the loops' iterations (EventLoopTicks)"
            logger.info(
                "event loops watched: \(monitors.count), by the process's watchdog and loop watcher threads; under load dated by \(boundaries); \(method)",
                metadata: ["hangwatch.service": "\(configuration.serviceName)"])
        }
        return EventLoopGroupMonitor(monitors: monitors)
    }
}
