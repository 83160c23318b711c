import CoreFoundation
import Dispatch
import Foundation

/// Trivial iterations as main-queue blocks on RunLoop.main: each block queues the next; the main
/// run loop services the main queue. Runs on the main thread.
enum MainQueueRun {
    static func run(iterations: Int, workNanoseconds: UInt64) -> (wall: Double, cpu: Double) {
        final class Counter: @unchecked Sendable { var remaining = 0 }
        let counter = Counter()
        counter.remaining = iterations
        @Sendable func step() {
            benchWork(nanoseconds: workNanoseconds)
            counter.remaining -= 1
            if counter.remaining == 0 {
                CFRunLoopStop(CFRunLoopGetMain())
                return
            }
            DispatchQueue.main.async(execute: step)
        }
        let cpuStart = Statistics.processCPUSeconds()
        let start = Statistics.monotonicSeconds()
        DispatchQueue.main.async(execute: step)
        CFRunLoopRun()
        return (Statistics.monotonicSeconds() - start, Statistics.processCPUSeconds() - cpuStart)
    }
}
