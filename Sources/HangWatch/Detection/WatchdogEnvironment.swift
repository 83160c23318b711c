import Dispatch
import Foundation
import HangWatchReport
import Synchronization

/// What the watchdog needs from the world: the time, a way to wait, and the scheduler counters and
/// process facts it reads. The real one reads the clocks and /proc and blocks the watchdog's
/// thread; tests use one whose time moves only when the watchdog waits (and plays a script of loop
/// activity as it does), so every decision runs deterministically, on the test's thread, without
/// sleeping.
package protocol WatchdogEnvironment: Sendable {
    /// `CLOCK_MONOTONIC`, microseconds.
    func now() -> UInt64
    /// The wall-clock time of monotonic instant `microseconds`.
    func date(ofMicroseconds microseconds: UInt64) -> Date
    /// Waits until `wake` is signalled (true) or `deadline` passes (false); nil: no deadline.
    func wait(_ wake: WatchdogWake, until deadline: UInt64?) -> Bool
    /// The watchdog thread's own counters (to tell a stopped process from a starved one). Called on
    /// the watchdog's thread.
    func ownSchedule() -> ProcTask.SchedStat?
    /// The monitored thread's counters (the baseline of a hang's CPU and run-queue ratios).
    func schedule(of thread: MonitoredThread) -> ProcTask.SchedStat?
    /// RSS, load, a tracer, at detection.
    func processSnapshot() -> ProcessSnapshot
    /// What holds `thread` back from outside its code (its cgroups' CPU limit and freezer, a stop
    /// by a signal, page faults): made once per thread by the lane that watches it, read on the
    /// watchdog's thread. Nil: nothing can be read.
    func contextProbe(for thread: MonitoredThread) -> (any HangContextProbing)?
}

/// Where the watchdog hands what it records: a watch's `MonitorReports`, which has its directory's
/// `ReportWriter` build the report (with the watch's `ReportBuilder`) and write it.
protocol HangSink: Sendable {
    /// A hang was detected (its first sample taken).
    func hangStarted(_ recording: HangRecording)
    /// More samples of a hang still going on.
    func hangProgressed(_ recording: HangRecording)
    /// The hang is over, or the monitor stopped during it.
    func hangEnded(_ recording: HangRecording, outcome: HangReport.Outcome)
}

/// The real environment: `CLOCK_MONOTONIC`, semaphore waits, /proc.
final class SystemWatchdogEnvironment: WatchdogEnvironment, @unchecked Sendable {
    private let clock = SystemMonotonicClock()
    /// The watchdog thread's own schedstat file, opened on first use (on that thread), re-read
    /// without allocating; opened again on another thread (a shared watchdog's thread exits when
    /// its last lane leaves, and the next starts a new one).
    private let ownFiles = Mutex<ProcTaskFilesBox?>(nil)

    func now() -> UInt64 { clock.microseconds() }

    func date(ofMicroseconds microseconds: UInt64) -> Date { clock.date(ofMicroseconds: microseconds) }

    func wait(_ wake: WatchdogWake, until deadline: UInt64?) -> Bool {
        guard let deadline else {
            wake.wait()
            return true
        }
        return wake.wait(untilNanoseconds: deadline * 1000)
    }

    func ownSchedule() -> ProcTask.SchedStat? {
        ownFiles.withLock { box in
            let tid = UnsafeCaptureBridge.currentThreadID()
            if box?.files.tid != tid, let files = ProcTaskFiles(tid: tid) {
                box = ProcTaskFilesBox(files: files)
            }
            return box?.files.readSchedStat()
        }
    }

    func schedule(of thread: MonitoredThread) -> ProcTask.SchedStat? {
        ProcTask(tid: thread.tid).schedStat()
    }

    func processSnapshot() -> ProcessSnapshot {
        ProcessSnapshot.read()
    }

    func contextProbe(for thread: MonitoredThread) -> (any HangContextProbing)? {
        LinuxHangContextProbe(thread: thread)
    }
}
