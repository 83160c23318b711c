import CoreFoundation
import Foundation
import Synchronization

/// A thread running a CFRunLoop, driven by a chain of blocks: each block does its work, performs
/// the next block and wakes the loop, so every iteration goes through the whole run-loop cycle
/// (beforeTimers, beforeSources, blocks, beforeWaiting, a wake-up, afterWaiting).
final class BenchLoop: @unchecked Sendable {
    private(set) var runLoop: RunLoop!
    private(set) var cfRunLoop: CFRunLoop!
    /// The loop thread's kernel id.
    private(set) var tid: Int32 = 0
    private var thread: Thread!
    private let ready = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let stopRequested = Atomic<Bool>(false)

    init() {
        thread = Thread { [self] in
            runLoop = RunLoop.current
            cfRunLoop = CFRunLoopGetCurrent()
            // /proc/thread-self -> "<pid>/task/<tid>"
            tid = Int32((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))?
                .split(separator: "/").last ?? "") ?? 0
            let keepAlive = Timer(fire: .distantFuture, interval: 3600, repeats: true) { _ in }
            RunLoop.current.add(keepAlive, forMode: .default)
            ready.signal()
            while !stopRequested.load(ordering: .relaxed) {
                _ = RunLoop.current.run(mode: .default, before: .distantFuture)
            }
            finished.signal()
        }
        thread.name = "bench-loop"
        thread.start()
        ready.wait()
    }

    func perform(_ block: @escaping @Sendable () -> Void) {
        CFRunLoopPerformBlock(cfRunLoop, kCFRunLoopCommonModes, block)
        CFRunLoopWakeUp(cfRunLoop)
    }

    func sync(_ block: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        perform {
            block()
            done.signal()
        }
        done.wait()
    }

    /// Runs `iterations` chained iterations of `workNanoseconds` each; returns wall and CPU seconds.
    func run(iterations: Int, workNanoseconds: UInt64) -> (wall: Double, cpu: Double) {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let loop = cfRunLoop!
        final class Counter: @unchecked Sendable { var remaining = 0 }
        let counter = Counter()
        counter.remaining = iterations
        @Sendable func step() {
            benchWork(nanoseconds: workNanoseconds)
            counter.remaining -= 1
            if counter.remaining == 0 {
                done.signal()
                return
            }
            CFRunLoopPerformBlock(loop, kCFRunLoopDefaultMode, step)
            CFRunLoopWakeUp(loop)
        }
        let cpuStart = Statistics.processCPUSeconds()
        let start = Statistics.monotonicSeconds()
        perform(step)
        done.wait()
        return (Statistics.monotonicSeconds() - start, Statistics.processCPUSeconds() - cpuStart)
    }

    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        perform { CFRunLoopStop(CFRunLoopGetCurrent()) }
        finished.wait()
    }
}
