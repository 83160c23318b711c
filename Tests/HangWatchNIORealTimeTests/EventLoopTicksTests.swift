import Foundation
import HangWatchNIO
import NIOCore
import NIOPosix
import Synchronization
import HangWatchTestSupport
import Testing

/// `EventLoopTicks` against real loops: each followed loop's last iteration end, on the monitor's
/// clock, and every iteration passed on to the delegate it forwards to.
@Suite struct EventLoopTicksTests {
    final class Counter: NIOEventLoopMetricsDelegate, Sendable {
        let iterations = Mutex<[ObjectIdentifier: Int]>([:])
        func processedTick(info: NIOEventLoopTickInfo) { iterations.withLock { $0[info.eventLoopID, default: 0] += 1 } }
    }

    @Test func eachFollowedLoopsLastIterationEndIsKeptAndEveryIterationForwarded() throws {
        let counter = Counter()
        let ticks = EventLoopTicks(forwardingTo: counter)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2, metricsDelegate: ticks)
        defer { try? group.syncShutdownGracefully() }
        let loops = Array(group.makeIterator())
        let slots = loops.map { ticks.slot(for: $0) }
        #expect(slots.allSatisfy { $0 != nil })
        #expect(ticks.slot(for: loops[0]) === slots[0], "one slot per loop")
        #expect(slots[0] !== slots[1])

        let start = clockNanoseconds()
        try loops[0].submit {}.wait()
        // The delegate hears of the iteration just after its tasks ran.
        #expect(Eventually.holds(timeout: 5) { (slots[0]?.lastEnd ?? 0) > start })
        #expect((slots[0]?.lastEnd ?? .max) <= clockNanoseconds())
        #expect(Eventually.holds(timeout: 5) { (counter.iterations.withLock { $0[ObjectIdentifier(loops[0])] } ?? 0) >= 1 })
    }

    @Test func aLoopNotFollowedIsForwardedButNotKept() throws {
        let counter = Counter()
        let ticks = EventLoopTicks(forwardingTo: counter)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: ticks)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        try loop.submit {}.wait()
        #expect(Eventually.holds(timeout: 5) { (counter.iterations.withLock { $0[ObjectIdentifier(loop)] } ?? 0) >= 1 })
        // Followed from now on: nothing kept from before.
        let slot = try #require(ticks.slot(for: loop))
        #expect(slot.lastEnd == nil)
    }
}
