/// How many attach jobs the pool watch enqueues after a look, so that every pool thread is attached
/// soon after it appears (`UnsafePoolThreadAttachments`): until then a job that computes on it
/// cannot be captured or followed (no signal, no task id). The probe attaches the thread it runs
/// on, but it runs once per threshold on whichever thread is free, so under load a thread can go
/// seconds without one (the first requests to a fresh server went unseen).
///
/// After a look that found pool threads not attached, one tiny job per such thread is enqueued;
/// each attaches the thread it happens to run on. A thread that runs none of them for
/// `patienceMicroseconds` is given up on (a thread a job started is named like the pool's workers
/// but never runs jobs): it costs nothing more. Pure: tests script the looks.
struct PoolAttachRequests: Sendable {
    var patienceMicroseconds: UInt64

    /// When each unattached thread (tid and start time) was first seen unattached.
    private var waiting: [[UInt64]: UInt64] = [:]

    init(patienceMicroseconds: UInt64 = 5_000_000) {
        self.patienceMicroseconds = patienceMicroseconds
    }

    /// The threads to enqueue an attach job for (one each, at its pool's priority) after a look at
    /// `now` that found `unattached` pool threads.
    mutating func due(unattached: [MonitoredThread], at now: UInt64) -> [MonitoredThread] {
        var still: [[UInt64]: UInt64] = [:]
        var due: [MonitoredThread] = []
        for thread in unattached {
            let key = [UInt64(UInt32(bitPattern: thread.tid)), thread.startTimeTicks]
            let since = waiting[key] ?? now
            still[key] = since
            if now - min(now, since) < patienceMicroseconds { due.append(thread) }
        }
        waiting = still
        return due
    }
}
