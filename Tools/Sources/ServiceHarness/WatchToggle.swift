import Dispatch
import HangWatchNIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A test service's watch of its event-loop group (`GET /watch` tells its state). With
/// `--toggle-watch` (the bench's paired windows), SIGUSR1 starts it and SIGUSR2 stops it, on a
/// queue of their own; without, it runs from the start (`adopt`). Shared by the Hummingbird and
/// Vapor services, so the bench measures both the same way.
package final class WatchToggle: Sendable {
    private let current = Mutex<EventLoopGroupMonitor?>(nil)

    package init() {}

    package func adopt(_ watch: EventLoopGroupMonitor) {
        current.withLock { $0 = watch }
    }

    /// Starts the watch now, or, with `toggled` (`--toggle-watch`), on SIGUSR1 (and stops it on
    /// SIGUSR2): the signal sources to cancel at the end.
    package func watch(toggled: Bool, start: @escaping @Sendable () throws -> EventLoopGroupMonitor) throws -> [any DispatchSourceSignal] {
        guard toggled else {
            adopt(try start())
            return []
        }
        return listen(start: start)
    }

    package func listen(start: @escaping @Sendable () throws -> EventLoopGroupMonitor) -> [any DispatchSourceSignal] {
        let queue = DispatchQueue(label: "watch-toggle")
        return [(SIGUSR1, true), (SIGUSR2, false)].map { number, on in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [self] in
                if on {
                    current.withLock { if $0 == nil { $0 = try? start() } }
                } else {
                    stop()
                }
            }
            source.resume()
            return source
        }
    }

    /// `off`, or how the loops are watched: `exact` once every loop's epoll instance is watched,
    /// `ping` until then (`GET /watch`: the bench measures a window once it is `exact`).
    package var state: String {
        current.withLock { $0.map { $0.watchesEventLoopsExactly ? "exact" : "ping" } ?? "off" }
    }

    package func stop() {
        let running = current.withLock { current -> EventLoopGroupMonitor? in
            defer { current = nil }
            return current
        }
        running?.stop()
    }
}

/// `/hello` requests answered (for `--toggle-watch`'s bench windows: `GET /served`).
package final class ServedCount: Sendable {
    private let count = Atomic<Int>(0)
    package init() {}
    package func add() { count.add(1, ordering: .relaxed) }
    package var value: Int { count.load(ordering: .relaxed) }
}
