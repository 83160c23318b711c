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
    /// A SwiftNIO event loop (HangWatchNIO): its epoll instance watched, else pinged.
    case nioEventLoop = "nio-eventloop"
    /// Swift's global concurrent executor (the cooperative pool), probed once per threshold by the
    /// process's one pool watch; its reports hold every pool thread (`threads`).
    case concurrencyPool = "concurrency-pool"
    /// One job that held a thread of that pool past the threshold: the same task (or the same
    /// blocking call) at every look of the same pool watch; its report is of that thread.
    case poolJob = "pool-job"
    /// Not a hang: every thread of the process on request (`hangwatch dump PID`).
    case dump
    /// Not a hang: every Swift task of the process, with its threads (`hangwatch dump --tasks PID`).
    case tasks
    /// Not a hang: every watch of the process with its flight recorder's window now
    /// (`hangwatch dump --recent PID`).
    case recent

    /// The report's `activity` for a stall of this source (run loops name the CF activity).
    var activityName: String? {
        switch self {
        case .runLoop: return nil
        case .scope: return "work"
        case .dispatchMain, .dispatchQueue, .nioEventLoop, .concurrencyPool: return "queued"
        case .poolJob: return "running"
        case .dump: return "dump"
        case .tasks: return "tasks"
        case .recent: return "recent"
        }
    }
}

/// How a report's start and end were found (the report's `edges`).
enum ActivityEdges: String, Sendable {
    /// Where the work began and ended, to the latch clock's 4 ms: a run loop's observers, declared
    /// scopes, an event loop's own wake (its epoll instance) and a ping's answer.
    case exact
    /// A ping once per threshold: the start is when the overdue ping was enqueued (a lower bound on
    /// the duration; the stall began up to one period earlier), the end is its answer.
    case ping
    /// Looks a sample interval apart: each edge half-way between two looks (off by at most half
    /// an interval).
    case sampled
}
