import Dispatch
import Foundation
import HangWatch
@_spi(Internal) import HangWatchReport

/// A `WatchdogEnvironment` on a `ScriptedClock`: the watchdog's waits run the script; the watchdog's
/// own scheduler counters and the process snapshot are whatever the test sets.
package final class FakeWatchdogEnvironment: WatchdogEnvironment, @unchecked Sendable {
    package let clock: ScriptedClock
    /// The watchdog's own counters, read around its timed waits (to tell stopped from starved):
    /// by default, on a CPU whenever it is not waiting, never queued.
    package var ownCounters: () -> ProcTask.SchedStat? = { ProcTask.SchedStat(onCPUNanoseconds: 0, runQueueNanoseconds: 0) }
    /// The monitored thread's counters (a hang's baseline).
    package var threadSchedule: () -> ProcTask.SchedStat? = { ProcTask.SchedStat(onCPUNanoseconds: 0, runQueueNanoseconds: 0) }
    package var snapshot = ProcessSnapshot(rssBytes: 1 << 24, loadAverage: [0.1, 0.1, 0.1], tracerPID: 0, cpuCount: 2)
    /// The monitored thread's context (cgroups, stops), scripted; nil: none readable.
    package var probe: ScriptedContextProbe?
    /// The wall clock at monotonic instant 0.
    package var epoch = Date(timeIntervalSince1970: 1_795_000_000)

    package init(clock: ScriptedClock = ScriptedClock()) {
        self.clock = clock
    }

    package func now() -> UInt64 { clock.now }
    package func date(ofMicroseconds microseconds: UInt64) -> Date { epoch.addingTimeInterval(Double(microseconds) / 1e6) }
    package func wait(_ wake: WatchdogWake, until deadline: UInt64?) -> Bool { clock.wait(wake, until: deadline) }
    package func ownSchedule() -> ProcTask.SchedStat? { ownCounters() }
    package func schedule(of thread: MonitoredThread) -> ProcTask.SchedStat? { threadSchedule() }
    package func processSnapshot() -> ProcessSnapshot { snapshot }
    package func contextProbe(for thread: MonitoredThread) -> (any HangContextProbing)? { probe }
}

/// A `HangContextProbing` whose counters the test scripts as functions of the time they are read
/// at; it keeps every read, by kind, in order.
package final class ScriptedContextProbe: HangContextProbing, @unchecked Sendable {
    package var scriptedFacts = HangContextFacts(hostCPUs: 2, allowedCPUs: 2)
    /// Every counter at time `microseconds`.
    package var counters: (_ microseconds: UInt64) -> HangContextCounters = { HangContextCounters(microseconds: $0) }
    package private(set) var reads: [(kind: String, microseconds: UInt64)] = []

    package init() {}

    package func facts() -> HangContextFacts {
        scriptedFacts
    }

    package func counters(at microseconds: UInt64) -> HangContextCounters {
        reads.append(("counters", microseconds))
        return counters(microseconds)
    }

    package func edge(at microseconds: UInt64) -> HangContextCounters {
        reads.append(("edge", microseconds))
        var all = counters(microseconds)
        all.tracerPID = nil
        return all
    }

    package func look(at microseconds: UInt64) -> HangContextCounters {
        reads.append(("look", microseconds))
        let all = counters(microseconds)
        return HangContextCounters(microseconds: microseconds, throttling: all.throttling.map { CgroupCPU.Throttling(throttledNanoseconds: $0.throttledNanoseconds) }, freezing: all.freezing)
    }

    package func pace(at microseconds: UInt64) -> HangContextCounters {
        reads.append(("pace", microseconds))
        let all = counters(microseconds)
        return HangContextCounters(
            microseconds: microseconds, schedule: all.schedule,
            throttling: all.throttling.map { CgroupCPU.Throttling(throttledNanoseconds: $0.throttledNanoseconds) })
    }
}

/// A `StackSampling` that returns what the test scripts, stamped with the scripted clock's time.
package final class ScriptedSampler: StackSampling, @unchecked Sendable {
    private let clock: ScriptedClock
    /// The sample for the thread at the time asked (its `microseconds` is set here).
    package var next: (_ now: UInt64, _ previous: StackSample?) -> StackSample
    /// Every sample returned, in order.
    package private(set) var taken: [StackSample] = []
    /// Whether each sample was allowed to signal the thread.
    package private(set) var signalsAllowed: [Bool] = []

    package init(clock: ScriptedClock, next: @escaping (_ now: UInt64, _ previous: StackSample?) -> StackSample = { _, _ in ScriptedSampler.computing() }) {
        self.clock = clock
        self.next = next
    }

    package func sample(_ thread: MonitoredThread, previous: StackSample?, signalAllowed: Bool) -> StackSample {
        var sample = next(clock.now, previous)
        sample.microseconds = clock.now
        taken.append(sample)
        signalsAllowed.append(signalAllowed)
        return sample
    }

    /// A thread on a CPU in `frames` (innermost first).
    package static func computing(_ frames: [UInt] = [0x1010, 0x1020, 0x1030]) -> StackSample {
        StackSample(microseconds: 0, frames: frames, method: .signal, truncated: false, state: "R", pauseNanoseconds: 5_000)
    }

    /// A thread blocked in system call `number` in `frames`.
    package static func blocked(_ frames: [UInt] = [0x2010, 0x1020, 0x1030], syscall number: Int = 202) -> StackSample {
        StackSample(microseconds: 0, frames: frames, method: .syscall, truncated: false, state: "S", syscall: number)
    }

    /// No stack: `failure`.
    package static func failed(_ failure: StackSample.Failure) -> StackSample {
        StackSample(microseconds: 0, frames: [], method: nil, truncated: false, failure: failure)
    }
}

extension MonitoredThread {
    /// A thread for scripted samples (no real stack behind it).
    package static let scripted = MonitoredThread(tid: 4242, startTimeTicks: 1, stackLow: 0, stackHigh: 1, name: "scripted", isMain: true)
}

/// The report writer reads the same scripted time.
extension ScriptedClock: MonotonicClock {
    package func microseconds() -> UInt64 { now }
}
