import NIOCore
import NIOPosix
import Synchronization

/// When each event loop of a group last finished an iteration, from SwiftNIO itself (its
/// `NIOEventLoopMetricsDelegate`): give it to the group when you make the group, and to the watch.
///
/// ```swift
/// let ticks = EventLoopTicks()
/// let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount, metricsDelegate: ticks)
/// let watch = try HangMonitor.watch(group, ticks: ticks, configuration: configuration)
/// ```
///
/// Under load a loop's busy stretch is dated from its last finished iteration, read by the
/// watcher at its looks, instead of from a ping sent to each busy loop at each look (the default):
/// no ping goes out before a hang, and the start of a hang under load is the end of the iteration
/// before it, not the last look's ping. Both reach the throughput goal on a saturated Hummingbird
/// server (docs/performance.md, `H1`: about 0.99 paired, either way). The delegate's own cost is two clock reads
/// per iteration (SwiftNIO makes them once a delegate is set) and the call: 66 ns (figure 17).
///
/// A delegate of your own goes on getting every iteration (``init(forwardingTo:)``). Up to
/// ``capacity`` loops are followed; a loop beyond them, or one whose group was made without this
/// delegate, is pinged at each look instead.
public final class EventLoopTicks: NIOEventLoopMetricsDelegate, Sendable {
    /// How many loops one instance follows.
    public static let capacity = 256

    private let next: (any NIOEventLoopMetricsDelegate)?
    private let slots: [Slot]
    /// How many slots are taken (each by one loop, for good).
    private let used = Atomic<Int>(0)
    private let claiming = Mutex<Void>(())

    /// One loop's last iteration end (`CLOCK_MONOTONIC` nanoseconds, 0 before the first).
    package final class Slot: Sendable {
        let loop = Atomic<UInt>(0)
        let end = Atomic<UInt64>(0)

        /// When the loop last finished an iteration, nil before the first.
        package var lastEnd: UInt64? {
            let end = end.load(ordering: .relaxed)
            return end == 0 ? nil : end
        }
    }

    /// A delegate that follows up to ``capacity`` loops.
    ///
    /// - Parameter next: A delegate of your own, given every iteration after this one has read it.
    public init(forwardingTo next: (any NIOEventLoopMetricsDelegate)? = nil) {
        self.next = next
        slots = (0..<Self.capacity).map { _ in Slot() }
    }

    /// Called by the loop after each iteration (on its thread): stores its end, then forwards it.
    ///
    /// - Parameter info: The iteration, from SwiftNIO; its `endTime` is kept.
    public func processedTick(info: NIOEventLoopTickInfo) {
        let loop = UInt(bitPattern: info.eventLoopID)
        let count = used.load(ordering: .acquiring)
        var index = 0
        while index < count {
            let slot = slots[index]
            if slot.loop.load(ordering: .relaxed) == loop {
                slot.end.store(info.endTime.uptimeNanoseconds, ordering: .relaxed)
                break
            }
            index += 1
        }
        next?.processedTick(info: info)
    }

    /// The slot of `loop`, taken on first use; nil when every slot is taken.
    package func slot(for loop: any EventLoop) -> Slot? {
        let identifier = UInt(bitPattern: ObjectIdentifier(loop))
        return claiming.withLock { _ -> Slot? in
            let count = used.load(ordering: .relaxed)
            if let slot = slots[0..<count].first(where: { $0.loop.load(ordering: .relaxed) == identifier }) { return slot }
            guard count < slots.count else { return nil }
            slots[count].loop.store(identifier, ordering: .relaxed)
            used.store(count + 1, ordering: .releasing)
            return slots[count]
        }
    }
}
