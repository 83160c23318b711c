import Foundation
import Synchronization

// The only file in HangWatch that imports CoreFoundation. On Linux CoreFoundation ships as an
// implementation detail of Foundation; if a toolchain moves it, this file is the one to change.
#if canImport(CoreFoundation)
import CoreFoundation
#endif

/// A CFRunLoop as a source of activity: observers on the loop feed an `ActivityLatch`.
///
/// Two observers: an early one (lowest order) records busy activities before any other observer
/// runs, and a late one (highest order) records `beforeWaiting` after every other observer has run,
/// so work done by other observers is never mistaken for idle time.
final class RunLoopActivitySource: ActivitySource, @unchecked Sendable {
    let kind = ActivitySourceKind.runLoop
    private let target: RunLoop
    private let additionalModes: [String]
    private let observedActivities: UInt8
    /// Whether every turn of the loop passes an observed busy activity before it drains the main
    /// queue (`beforeTimers` or `beforeSources` busy): then one hang, one piece, holds at most one
    /// drain, and a task runs at most one job in it (`taskWord(of:)`, `RunLoopHangKind.fromTasks`).
    private let turnsAreObserved: Bool
    /// The process's loops reached before from another thread (`ProcessRuntime.runLoops`).
    private let knownLoops: ReachedRunLoops
    private let state = Mutex<State>(State())

    /// CoreFoundation objects are thread-safe; the lock guards which ones we hold.
    private struct State: @unchecked Sendable {
        var latch: ActivityLatch?
        var runLoop: CFRunLoop?
        var isMainLoop = false
        var early: CFRunLoopObserver?
        var late: CFRunLoopObserver?
        var invalidated = false
        /// The loop's thread as its attach step found it: its tid and thread pointer.
        var thread: (tid: Int32, pointer: UInt)?
    }

    init(runLoop: RunLoop, busyActivities: Set<HangMonitor.Activity>, additionalModes: [String], knownLoops: ReachedRunLoops) {
        target = runLoop
        self.knownLoops = knownLoops
        self.additionalModes = additionalModes
        // The detector needs the busy activities, the sleep edge and the wake edge.
        turnsAreObserved = busyActivities.contains(.beforeSources) || busyActivities.contains(.beforeTimers)
        self.observedActivities =
            HangMonitor.Activity.mask(busyActivities) | HangMonitor.Activity.beforeWaiting.rawValue
            | HangMonitor.Activity.afterWaiting.rawValue
    }

    /// Binds to the loop and installs the observers: at once when called on the loop's thread, for
    /// the main loop, or for a loop reached before (each then attaches on its next turn, woken now);
    /// the first time for another thread's loop, from that thread (a timer due now, added from here,
    /// also wakes the loop if it sleeps; `RunLoop.perform` would wait for its next wake).
    func start(edges latch: ActivityLatch, attach step: @escaping @Sendable () -> Void) {
        state.withLock { $0.latch = latch }
        let attach: @Sendable () -> Void = { [weak self] in
            self?.noteLoopThread()
            step()
        }
        // (A main loop runs main-actor jobs when it drains the main queue: a hang's reads say
        // which task each found, `RunLoopHangKind.fromTasks`.)
        if Self.isMain(target) { UnsafePoolThreadAttachments.shared.learnTaskWordOffsetOnTheMainActor() }
        if Self.isCurrent(target) {
            bindCurrentLoop()
            install(additionalModes: additionalModes)
            attach()
        } else if Self.isMain(target) {
            bindMainLoop()
            install(additionalModes: additionalModes)
            perform(attach)
        } else if let known = knownLoops.loop(of: target) {
            bind(known)
            install(additionalModes: additionalModes)
            perform(attach)
        } else {
            // swift-corelibs-foundation never releases a Timer (its CFRunLoopTimer's context retains
            // it, with no release callback): this one, and what its block holds, stays for good. So
            // a loop is reached by a timer once (the block holds this source weakly), and by
            // CFRunLoopPerformBlock from then on.
            let timer = Timer(timeInterval: 0, repeats: false) { [weak self, knownLoops] _ in
                knownLoops.remember(RunLoop.current, CFRunLoopGetCurrent())
                guard let self else { return }
                bindCurrentLoop()
                install(additionalModes: self.additionalModes)
                attach()
            }
            target.add(timer, forMode: .common)
        }
    }

    /// A loop asleep (in a mode the observers did not see: a nested run in a custom mode, which is
    /// observed from now on) or not running at all is not busy.
    func confirmBusy() -> BusyConfirmation {
        let waiting = isWaiting
        guard !waiting, let mode = currentMode else {
            if waiting { observeCurrentMode() }
            return .idle
        }
        return .busy(context: mode)
    }

    var edges: ActivityEdges { .exact }

    /// The loop thread's current-task word (the main loop runs main-actor jobs when it drains the
    /// main queue), once its attach step ran and the word's place is known; nil where a turn may
    /// pass unobserved (`turnsAreObserved`).
    func taskWord(of tid: Int32) -> UInt? {
        guard turnsAreObserved, let thread = state.withLock({ $0.thread }), thread.tid == tid else { return nil }
        return UnsafePoolThreadAttachments.shared.taskSlot(threadPointer: thread.pointer)
    }

    /// Notes the calling thread (the loop's, in its attach step) for `taskWord(of:)`.
    private func noteLoopThread() {
        let thread = (tid: UnsafeCaptureBridge.currentThreadID(), pointer: UInt(pthread_self()))
        state.withLock { $0.thread = thread }
    }

    func stop() {
        invalidate()
    }

    /// Binds the source to the main thread's run loop.
    func bindMainLoop() {
        bind(CFRunLoopGetMain())
    }

    /// Binds the source to the calling thread's run loop.
    func bindCurrentLoop() {
        bind(CFRunLoopGetCurrent())
    }

    private func bind(_ loop: CFRunLoop) {
        state.withLock { state in
            state.runLoop = loop
            state.isMainLoop = CFEqual(loop, CFRunLoopGetMain())
        }
    }

    /// Whether `runLoop` is the main run loop / the calling thread's run loop. Foundation on Linux
    /// does not expose a `RunLoop`'s CFRunLoop; these two, and a block performed on the loop's
    /// thread, are how the source finds it.
    static func isMain(_ runLoop: RunLoop) -> Bool { runLoop === RunLoop.main }
    static func isCurrent(_ runLoop: RunLoop) -> Bool { runLoop === RunLoop.current }

    private var runLoop: CFRunLoop? { state.withLock { $0.runLoop } }

    /// Adds the observers to the bound loop's common modes and to `additionalModes`. Does nothing
    /// when unbound or already invalidated (a stop that came first).
    func install(additionalModes: [String]) {
        guard let runLoop, let latch = state.withLock({ $0.invalidated ? nil : $0.latch }) else { return }
        // `info` is the latch's storage; the retain and release callbacks keep the latch that owns
        // it alive for as long as CoreFoundation holds an observer.
        var context = CFRunLoopObserverContext(
            version: 0, info: UnsafeMutableRawPointer(latch.storage),
            retain: { info in
                guard let info else { return nil }
                let storage = info.assumingMemoryBound(to: UnsafeLatchStorage.self)
                if let owner = storage.pointee.owner { _ = Unmanaged<ActivityLatch>.fromOpaque(owner).retain() }
                return UnsafeRawPointer(info)
            },
            release: { info in
                guard let info else { return }
                let storage = info.assumingMemoryBound(to: UnsafeLatchStorage.self)
                if let owner = storage.pointee.owner { Unmanaged<ActivityLatch>.fromOpaque(owner).release() }
            },
            copyDescription: nil)
        let idle = HangMonitor.Activity.beforeWaiting.rawValue
        let early = CFRunLoopObserverCreate(
            kCFAllocatorDefault, CFOptionFlags(observedActivities & ~idle), true, CFIndex.min,
            Self.observerCallback, &context)
        let late = CFRunLoopObserverCreate(
            kCFAllocatorDefault, CFOptionFlags(idle), true, CFIndex.max, Self.observerCallback, &context)
        let installed = state.withLock { state -> Bool in
            guard !state.invalidated else { return false }
            state.early = early
            state.late = late
            return true
        }
        guard installed else { return }
        CFRunLoopAddObserver(runLoop, early, kCFRunLoopCommonModes)
        CFRunLoopAddObserver(runLoop, late, kCFRunLoopCommonModes)
        for mode in additionalModes {
            observe(modeNamed: mode)
        }
    }

    /// The observer callback: a C function, so CoreFoundation calls it without a block trampoline.
    /// `info` is nil in a callout that raced with `invalidate()` on another thread: CoreFoundation
    /// reads an observer's `info` after checking it valid and unlocking it, and invalidation sets
    /// it to NULL (CFRunLoop.c): the source is stopping, there is nothing to record. (Seen once as a
    /// crash of `LifecycleTests`' start/stop cycles.)
    static let observerCallback: CFRunLoopObserverCallBack = { _, activity, info in
        guard let info else { return }
        UnsafeLatchStorage.record(UInt8(truncatingIfNeeded: activity.rawValue), in: info.assumingMemoryBound(to: UnsafeLatchStorage.self))
    }

    /// Removes the observers. Safe from any thread; a callout in progress finishes with a latch
    /// that the observer keeps alive until CoreFoundation releases it.
    func invalidate() {
        let (early, late) = state.withLock { state -> (CFRunLoopObserver?, CFRunLoopObserver?) in
            defer {
                state.early = nil
                state.late = nil
                state.invalidated = true
            }
            return (state.early, state.late)
        }
        if let early { CFRunLoopObserverInvalidate(early) }
        if let late { CFRunLoopObserverInvalidate(late) }
    }

    /// True while the loop is asleep waiting for an event (between `beforeWaiting` and `afterWaiting`
    /// of whatever mode it runs, observed or not).
    var isWaiting: Bool {
        guard let runLoop else { return false }
        return CFRunLoopIsWaiting(runLoop)
    }

    /// The mode the loop is running in, if any.
    var currentMode: String? {
        guard let runLoop, let mode = CFRunLoopCopyCurrentMode(runLoop) else { return nil }
        return Self.string(mode)
    }

    /// Makes sure the observers also watch the loop's current mode. Returns true when that mode
    /// was not observed before (a nested run in a custom mode).
    @discardableResult
    func observeCurrentMode() -> Bool {
        guard let runLoop, let mode = CFRunLoopCopyCurrentMode(runLoop) else { return false }
        return observe(mode: mode)
    }

    @discardableResult
    private func observe(modeNamed name: String) -> Bool {
        guard let mode = CFStringCreateWithCString(kCFAllocatorDefault, name, CFStringBuiltInEncodings.UTF8.rawValue) else {
            return false
        }
        return observe(mode: mode)
    }

    private func observe(mode: CFString) -> Bool {
        let observers = state.withLock { state -> (CFRunLoop, CFRunLoopObserver, CFRunLoopObserver)? in
            guard let loop = state.runLoop, let early = state.early, let late = state.late else { return nil }
            return (loop, early, late)
        }
        guard let (runLoop, early, late) = observers, !CFRunLoopContainsObserver(runLoop, early, mode) else { return false }
        CFRunLoopAddObserver(runLoop, early, mode)
        CFRunLoopAddObserver(runLoop, late, mode)
        return true
    }

    /// Runs `block` on the bound loop's thread the next time the loop runs in a common mode.
    func perform(_ block: @escaping @Sendable () -> Void) {
        guard let runLoop else { return }
        CFRunLoopPerformBlock(runLoop, kCFRunLoopCommonModes, block)
        CFRunLoopWakeUp(runLoop)
    }

    /// Whether the calling thread is the bound loop's thread.
    var isCurrent: Bool {
        guard let runLoop else { return false }
        return CFEqual(CFRunLoopGetCurrent(), runLoop)
    }

    var isMainLoop: Bool { state.withLock { $0.isMainLoop } }

    private static func string(_ value: CFString) -> String {
        let length = CFStringGetLength(value)
        let capacity = CFStringGetMaximumSizeForEncoding(length, CFStringBuiltInEncodings.UTF8.rawValue) + 1
        var buffer = [CChar](repeating: 0, count: capacity)
        guard CFStringGetCString(value, &buffer, capacity, CFStringBuiltInEncodings.UTF8.rawValue) else { return "?" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The CFRunLoops behind RunLoops reached before from another thread (Foundation on Linux does not
/// expose them), one table per process (`ProcessRuntime.runLoops`): a loop reached by one monitor's
/// timer is bound at once by the next monitor of it. An entry lasts as long as its RunLoop (which
/// holds its CFRunLoop); entries of loops gone are dropped when another is remembered.
final class ReachedRunLoops: Sendable {
    private struct ReachedLoop: @unchecked Sendable {
        weak var runLoop: RunLoop?
        let loop: Unmanaged<CFRunLoop>
    }
    private let loops = Mutex<[ReachedLoop]>([])

    func loop(of runLoop: RunLoop) -> CFRunLoop? {
        loops.withLock { loops in
            loops.first { $0.runLoop === runLoop }.map { $0.loop.takeUnretainedValue() }
        }
    }

    func remember(_ runLoop: RunLoop, _ loop: CFRunLoop) {
        loops.withLock { loops in
            loops.removeAll { $0.runLoop == nil || $0.runLoop === runLoop }
            loops.append(ReachedLoop(runLoop: runLoop, loop: .passUnretained(loop)))
        }
    }
}
