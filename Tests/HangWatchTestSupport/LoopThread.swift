import CoreFoundation
import Foundation
import Synchronization

/// A thread that runs its own run loop, for tests that need a loop to hang.
package final class LoopThread: @unchecked Sendable {
    package private(set) var runLoop: RunLoop!
    /// The loop thread's id (for its `/proc` files).
    package private(set) var tid: Int32 = 0
    private var cfRunLoop: CFRunLoop!
    private var thread: Thread!
    private let ready = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let stopRequested = Atomic<Bool>(false)
    /// How many times the loop has gone to sleep (its `beforeWaiting` activities), under `asleep`.
    private var sleeps = 0
    private let asleep = NSCondition()

    package init(name: String = "test-loop") {
        thread = Thread { [self] in
            ThreadName.setCurrent(name)
            runLoop = RunLoop.current
            tid = CPUShare.currentTID()
            cfRunLoop = CFRunLoopGetCurrent()
            // A repeating timer keeps the loop from finishing when it has nothing else to do.
            let keepAlive = Timer(fire: .distantFuture, interval: 3600, repeats: true) { _ in }
            RunLoop.current.add(keepAlive, forMode: .default)
            let sleeping = CFRunLoopObserverCreateWithHandler(
                nil, CFOptionFlags(1 << 5 /* kCFRunLoopBeforeWaiting */), true, 0
            ) { [self] _, _ in
                asleep.lock()
                sleeps += 1
                asleep.broadcast()
                asleep.unlock()
            }
            CFRunLoopAddObserver(cfRunLoop, sleeping, kCFRunLoopCommonModes)
            ready.signal()
            while !stopRequested.load(ordering: .relaxed) {
                _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(0.25))
            }
            keepAlive.invalidate()
            finished.signal()
        }
        thread.start()
        ready.wait()
    }

    /// Runs `block` on the loop, waking it (Foundation's `RunLoop.perform` does not wake a
    /// sleeping loop on Linux).
    package func perform(_ block: @escaping @Sendable () -> Void) {
        CFRunLoopPerformBlock(cfRunLoop, kCFRunLoopCommonModes, block)
        CFRunLoopWakeUp(cfRunLoop)
    }

    /// Runs `block` from a timer on the loop (busy after `afterWaiting`), `seconds` from now. (Not
    /// `Timer(timeInterval:)`: swift-corelibs-foundation fires that one at once.)
    package func afterDelay(_ seconds: Double, _ block: @escaping @Sendable () -> Void) {
        perform {
            let timer = Timer(fire: Date(timeIntervalSinceNow: seconds), interval: 0, repeats: false) { _ in block() }
            RunLoop.current.add(timer, forMode: .default)
        }
    }

    /// Runs `block` on the loop and waits for it.
    package func sync(_ block: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        perform {
            block()
            done.signal()
        }
        done.wait()
    }

    /// Runs `block` on the loop, waits for it, and then for the loop to go to sleep: the next
    /// block runs in an iteration of its own (blocks performed back to back can share one, with no
    /// activity between them).
    package func iteration(_ block: @escaping @Sendable () -> Void) {
        let sleptBefore = Mutex(0)
        sync { [self] in
            block()
            asleep.lock()
            let count = sleeps
            asleep.unlock()
            sleptBefore.withLock { $0 = count }
        }
        let count = sleptBefore.withLock { $0 }
        asleep.lock()
        while sleeps <= count { asleep.wait() }
        asleep.unlock()
    }

    package func stop() {
        stopRequested.store(true, ordering: .relaxed)
        // Stop the current run explicitly: on Linux, a run whose timeout passed during a nested run
        // of the same mode does not return by itself. Again until the thread is done: a stop that
        // lands in a nested run (one a test's block still runs) ends only that one.
        repeat {
            perform { CFRunLoopStop(CFRunLoopGetCurrent()) }
        } while finished.wait(timeout: .now() + .milliseconds(200)) == .timedOut
    }
}
