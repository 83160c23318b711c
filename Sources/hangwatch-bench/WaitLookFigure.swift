import Foundation
import HangWatch

/// Figure 20: what looking at a blocked hang's wait costs the watchdog, per sample: a thread
/// blocked on a mutex whose holder sleeps `depth` frames deep; the waiter's own sample (the
/// `/proc` walk) and then the wait: the lock read, the holder's stack walked (cached while it
/// stays in the same call, as in a hang), the holder's own wait looked at.
struct WaitLookFigure {
    var depth = 44
    var count = 500

    struct Outcome {
        var holderFrames: Int
        var first: (sample: Double, wait: Double)
        var sample: [Double]
        var wait: [Double]
    }

    func measure() throws -> Outcome {
        let lock = NSLock()
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            lock.lock()
            held.signal()
            holdAtDepth(44, until: release)
            lock.unlock()
        }
        holder.stackSize = 1 << 20
        holder.start()
        held.wait()
        nonisolated(unsafe) var waiterTID: Int32 = 0
        let waiting = DispatchSemaphore(value: 0)
        let waiter = Thread {
            waiterTID = benchThreadID()
            waiting.signal()
            lock.lock()
            lock.unlock()
        }
        waiter.start()
        waiting.wait()
        defer { release.signal() }
        let inspector = CaptureProbe.waitInspector()
        var first: (sampleNanoseconds: Int64, waitNanoseconds: Int64, holder: Int32?, holderFrames: Int)?
        for _ in 0..<500 where first?.holder == nil {
            usleep(2000)
            first = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector)
        }
        guard let first, first.holder != nil else { throw BenchError.setup("no holder found") }
        var samples: [Double] = []
        var waits: [Double] = []
        for _ in 0..<count {
            guard let look = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector) else { continue }
            samples.append(Double(look.sampleNanoseconds) / 1000)
            waits.append(Double(look.waitNanoseconds) / 1000)
        }
        return Outcome(
            holderFrames: first.holderFrames, first: (Double(first.sampleNanoseconds) / 1000, Double(first.waitNanoseconds) / 1000),
            sample: samples, wait: waits)
    }
}

@inline(never)
func holdAtDepth(_ depth: Int, until release: DispatchSemaphore) {
    if depth > 0 {
        holdAtDepth(depth - 1, until: release)
        blackHole(UInt64(depth))
        return
    }
    release.wait()
}

/// This thread's id (`/proc/thread-self`).
func benchThreadID() -> Int32 {
    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return Int32(target.split(separator: "/").last ?? "") ?? 0
}
