/// What a hang's recording keeps of what held its thread back from outside its code
/// (`HangContextProbing`): the counters at the hang's start (the first look at the busy stretch, or
/// detection), as of the latest sample, and at the end; what only a live look could see (a freezer
/// caught freezing, a tracer after a stop); and the watchdog's own stops. The builder turns it into
/// the report's figures (`ContextFindings`). Bounded: a few values, whatever the hang's length.
struct HangContextRecord: Sendable, Equatable {
    var facts: HangContextFacts?
    var start: HangContextCounters?
    /// The latest sample's look: the throttling so far, with the thread's scheduler counters of that
    /// sample.
    var latest: HangContextCounters?
    var end: HangContextCounters?
    /// A look found the freezer freezing or frozen (v1 `freezer.state`, v2 `cgroup.events`).
    var freezerSeen = false
    /// A tracer the watchdog saw after a stop, or at the end.
    var tracerSeen: Int32?
    /// The late wakes of the watchdog judged a stop (before detection, and while sampling): their
    /// lateness in all, µs. A lower bound of the time stopped (a stop begins before the wait it
    /// delays ends).
    var stopGapMicroseconds: UInt64 = 0
    /// The part of it before `start` (a stop before detection, when `start` is detection's).
    var stopGapBeforeStartMicroseconds: UInt64 = 0

    /// A sample's look.
    mutating func note(look: HangContextCounters, sample: StackSample) {
        var look = look
        if let onCPU = sample.onCPUNanoseconds, let queue = sample.runQueueNanoseconds {
            look.schedule = ProcTask.SchedStat(onCPUNanoseconds: onCPU, runQueueNanoseconds: queue)
        }
        if look.freezing == true { freezerSeen = true }
        latest = look
    }

    /// Counters read at the start or the end.
    mutating func note(counters: HangContextCounters) {
        if counters.freezing == true { freezerSeen = true }
        if let tracer = counters.tracerPID, tracer != 0 { tracerSeen = tracer }
    }

    /// A late wake judged a stop: how late, the tracer then (nil: not read), and whether it came
    /// before `start`.
    mutating func noteStop(lateMicroseconds: UInt64, tracerPID: Int32?, beforeStart: Bool = false) {
        stopGapMicroseconds &+= lateMicroseconds
        if beforeStart { stopGapBeforeStartMicroseconds &+= lateMicroseconds }
        if let tracerPID, tracerPID != 0 { tracerSeen = tracerPID }
    }
}
