import CoreFoundation
import Dispatch
import Foundation
import Synchronization

/// What is compared with HangWatch, built here and not in the product.
protocol Baseline: AnyObject {
    /// Starts observing `runLoop` (`cfRunLoop` is the same loop).
    func attach(to runLoop: RunLoop, _ cfRunLoop: CFRunLoop)
    func detach()
}

extension Baseline {
    func attach(to loop: BenchLoop) {
        attach(to: loop.runLoop, loop.cfRunLoop)
    }
}

/// The floor: observers on the same activities HangWatch observes (early: beforeSources and
/// afterWaiting; late: beforeWaiting) whose C callback only stores the activity. CoreFoundation's
/// observer dispatch is the physical floor of an observer-based design.
final class FloorObserver: Baseline {
    /// Where the callback stores the activity: plain memory, no Swift globals (whose lazy
    /// initialization check would cost more than the store).
    private let slot = UnsafeMutablePointer<UInt>.allocate(capacity: 1)
    private var observers: [CFRunLoopObserver] = []

    deinit { slot.deallocate() }

    func attach(to runLoop: RunLoop, _ cfRunLoop: CFRunLoop) {
        let callback: CFRunLoopObserverCallBack = { _, activity, info in
            info!.assumingMemoryBound(to: UInt.self).pointee = activity.rawValue
        }
        var context = CFRunLoopObserverContext(version: 0, info: UnsafeMutableRawPointer(slot), retain: nil, release: nil, copyDescription: nil)
        let early = CFRunLoopObserverCreate(
            nil, CFRunLoopActivity.beforeSources.rawValue | CFRunLoopActivity.afterWaiting.rawValue, true, CFIndex.min,
            callback, &context)!
        let late = CFRunLoopObserverCreate(nil, CFRunLoopActivity.beforeWaiting.rawValue, true, CFIndex.max, callback, &context)!
        observers = [early, late]
        for observer in observers { CFRunLoopAddObserver(cfRunLoop, observer, kCFRunLoopCommonModes) }
    }

    func detach() {
        for observer in observers { CFRunLoopObserverInvalidate(observer) }
        observers = []
    }
}

/// The naive design (the classic article's watchdog): an observer that signals a semaphore on
/// every activity, and a watchdog thread that waits on it with the threshold as timeout.
final class NaiveMonitor: Baseline, @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let activity = Atomic<UInt>(0)
    private let stopRequested = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private var observer: CFRunLoopObserver?
    let timeouts = Atomic<Int>(0)

    func attach(to runLoop: RunLoop, _ cfRunLoop: CFRunLoop) {
        stopRequested.store(false, ordering: .relaxed)
        var context = CFRunLoopObserverContext(
            version: 0, info: Unmanaged.passUnretained(self).toOpaque(), retain: nil, release: nil, copyDescription: nil)
        observer = CFRunLoopObserverCreate(
            nil, CFRunLoopActivity.allActivities.rawValue, true, 0,
            { _, activity, info in
                let monitor = Unmanaged<NaiveMonitor>.fromOpaque(info!).takeUnretainedValue()
                monitor.activity.store(activity.rawValue, ordering: .relaxed)
                monitor.semaphore.signal()
            }, &context)
        CFRunLoopAddObserver(cfRunLoop, observer, kCFRunLoopCommonModes)
        Thread { [self] in
            while !stopRequested.load(ordering: .relaxed) {
                if semaphore.wait(timeout: .now() + .milliseconds(250)) == .timedOut {
                    let current = activity.load(ordering: .relaxed)
                    if current == CFRunLoopActivity.beforeSources.rawValue || current == CFRunLoopActivity.afterWaiting.rawValue {
                        timeouts.add(1, ordering: .relaxed)
                    }
                }
            }
            finished.signal()
        }.start()
    }

    func detach() {
        if let observer { CFRunLoopObserverInvalidate(observer) }
        observer = nil
        stopRequested.store(true, ordering: .relaxed)
        semaphore.signal()
        finished.wait()
    }
}
