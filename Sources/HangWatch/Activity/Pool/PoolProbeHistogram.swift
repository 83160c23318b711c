import Synchronization

/// The pool probe's start delays, process-wide (`ProcessRuntime.poolDelays`: one pool watch per
/// process, whichever monitor runs it): `HangMonitor.Statistics.concurrencyPool`. Written by the pool watch's thread once per
/// period; the buckets are the loop-busy histogram's (`hw_loop_bounds_ns`).
final class PoolProbeHistogram: Sendable {
    private let state: Mutex<HangMonitor.PoolProbeDelays>

    init(bounds: [UInt64] = UnsafeLoopHistogram.bucketBounds) {
        var empty = HangMonitor.PoolProbeDelays()
        empty.bucketUpperBoundsNanoseconds = bounds
        empty.counts = Array(repeating: 0, count: bounds.count + 1)
        state = Mutex(empty)
    }

    /// One probe that started `nanoseconds` after it was enqueued.
    func add(delayNanoseconds nanoseconds: UInt64) {
        state.withLock { delays in
            let bucket = delays.bucketUpperBoundsNanoseconds.firstIndex { nanoseconds <= $0 } ?? delays.bucketUpperBoundsNanoseconds.count
            delays.counts[bucket] &+= 1
            delays.totalNanoseconds &+= nanoseconds
        }
    }

    /// One probe that had not started within the threshold.
    func addStarvation() {
        state.withLock { $0.starvations += 1 }
    }

    /// The pool watch rested.
    func addRest() {
        state.withLock { $0.rests += 1 }
    }

    var snapshot: HangMonitor.PoolProbeDelays {
        state.withLock { $0 }
    }
}
