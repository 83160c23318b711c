/// The kinds of activity source a monitor can watch; a report names its source.
enum ActivitySourceKind: String, Sendable {
    /// A CFRunLoop, through observers (`start()`, `start(runLoop:)`).
    case runLoop = "runloop"
    /// Work a thread declares itself (`startWatchingScopes()`, `enterWork()` / `leaveWork()`,
    /// `watch(deadline:)`), for threads that run their own loop.
    case scope
    /// The main queue, pinged (`startWatchingMainQueue()`): `dispatchMain()`, `async` `@main`, MainActor.
    case dispatchMain = "dispatch-main"
    /// A serial dispatch queue, pinged (`start(queue:)`).
    case dispatchQueue = "dispatch-queue"
    /// A SwiftNIO event loop, pinged (HangWatchNIO).
    case nioEventLoop = "nio-eventloop"
    /// Swift's global concurrent executor (the cooperative pool), probed once per threshold by the
    /// process's one pool watch; its reports hold every pool thread (`threads`).
    case concurrencyPool = "concurrency-pool"
    /// One job that held a thread of that pool past the threshold: the same task (or the same
    /// blocking call) at every look of the same pool watch; its report is of that thread.
    case poolJob = "pool-job"

    /// The report's `activity` for a stall of this source (run loops name the CF activity).
    var activityName: String? {
        switch self {
        case .runLoop: return nil
        case .scope: return "work"
        case .dispatchMain, .dispatchQueue, .nioEventLoop, .concurrencyPool: return "queued"
        case .poolJob: return "running"
        }
    }
}
