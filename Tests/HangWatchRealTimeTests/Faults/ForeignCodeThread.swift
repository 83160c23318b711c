import Foundation
import HangWatchTestSupport
@testable import HangWatch

/// A thread attached for captures that runs one of `FaultLibrary`'s loops until `stop()`. Its
/// `progress` counter tells a thread that keeps running from one that is stuck.
final class ForeignCodeThread: @unchecked Sendable {
    let attachment: UnsafeCaptureBridge.Attachment
    private let stopFlag = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    private let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    private let finished = DispatchSemaphore(value: 0)

    /// `body` runs on the new thread after it attached; it gets the thread's stack bounds, the stop
    /// flag and the progress counter. `stackSize` 0 keeps the default.
    init(
        signal: Int32, stackSize: Int = 0,
        body: @escaping @Sendable (UnsafeCaptureBridge.Attachment, UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int>) -> Void
    ) {
        stopFlag.initialize(to: 0)
        counter.initialize(to: 0)
        let ready = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var attached: UnsafeCaptureBridge.Attachment?
        nonisolated(unsafe) let (stop, counter) = (stopFlag, counter)
        let finished = finished
        let thread = Thread {
            let attachment = UnsafeCaptureBridge.attachCurrentThread(alternateStackSize: 64 << 10, signal: signal)
            attached = attachment
            ready.signal()
            body(attachment, stop, counter)
            finished.signal()
        }
        if stackSize > 0 { thread.stackSize = stackSize }
        thread.start()
        ready.wait()
        attachment = attached!
    }

    var progress: Int { counter.pointee }

    /// Waits up to `seconds` for the thread to make progress; false if it made none (stuck).
    func makesProgress(within seconds: Double = 5) -> Bool {
        let start = progress
        return Eventually.holds(timeout: seconds, interval: 0.001) { progress > start }
    }

    func stop() {
        stopFlag.pointee = 1
        finished.wait()
    }

    deinit {
        stopFlag.deallocate()
        counter.deallocate()
    }
}
