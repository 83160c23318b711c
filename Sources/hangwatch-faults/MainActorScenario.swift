import Dispatch
import Foundation
import HangWatch
import Synchronization

// hangwatch-faults mainactor --reports DIR --mode one|many [--count N] [--ms M]
//   Main-actor jobs holding the main queue (threshold 200 ms), the process in `dispatchMain()`,
//   the monitor watching the main queue (`startWatchingMainQueue`):
//   - one: a task on the main actor computes M ms (default 800) in `holdMainActor(milliseconds:)`;
//   - many: N tasks (default 2,000) made at once in one block on the main queue, each computing
//     0.5 ms on the main actor in `shortMainActorJob()`.
//   Exits once every job ran and a report is written (or 10 s passed), printing one JSON line: the
//   reports written and the main-actor jobs that ran.

let mainActorJobsRan = Atomic<Int>(0)

@MainActor @inline(never)
func holdMainActor(milliseconds: Int) {
    _ = spinComputing(seconds: Double(milliseconds) / 1000)
    mainActorJobsRan.add(1, ordering: .relaxed)
}

@MainActor @inline(never)
func shortMainActorJob() {
    _ = spinComputing(seconds: 0.0005)
    mainActorJobsRan.add(1, ordering: .relaxed)
}

func runMainActor(_ options: Options) -> Never {
    guard options.mode == "one" || options.mode == "many" else { fail("mainactor takes --mode one|many") }
    var configuration = HangMonitor.Configuration(serviceName: "mainactor", threshold: .milliseconds(200), reportDirectory: options.reports)
    configuration.repeatWindow = .zero
    let monitor = startedMonitor(configuration) { try $0.startWatchingMainQueue() }
    let count = options.count > 1 ? options.count : 2_000
    let milliseconds = options.milliseconds > 0 ? options.milliseconds : 800
    Thread {
        // The monitor's first pings answered, its probe on the main actor run.
        usleep(600_000)
        if options.mode == "one" {
            Task { @MainActor in holdMainActor(milliseconds: milliseconds) }
        } else {
            // Made in one block on the main queue: every job is queued before the queue can run
            // any, and before the monitor's next ping.
            DispatchQueue.main.async {
                for _ in 0..<count { Task { @MainActor in shortMainActorJob() } }
            }
        }
        // Every job run, then the hang's end (the next ping answered) and its final report.
        let expected = options.mode == "one" ? 1 : count
        let deadline = Date().addingTimeInterval(10)
        while mainActorJobsRan.load(ordering: .relaxed) < expected && Date() < deadline { usleep(20_000) }
        while monitor.statistics.reportsWritten + monitor.statistics.writeFailures < 1 && Date() < deadline { usleep(20_000) }
        usleep(500_000)
        monitor.stop()
        print("{\"reportsWritten\":\(monitor.statistics.reportsWritten),\"ran\":\(mainActorJobsRan.load(ordering: .relaxed))}")
        exit(0)
    }.start()
    dispatchMain()
}
