import Dispatch
import Foundation
import HangWatch
import Synchronization

// hangwatch-faults mainactor --reports DIR --mode one|many [--count N] [--ms M] [--source S]
//   Main-actor jobs holding the main queue (threshold 200 ms). With --source main-queue the
//   process is in `dispatchMain()` and the monitor watches the main queue
//   (`startWatchingMainQueue`); with run-loop (the default) the main thread runs `RunLoop.main`,
//   which drains the main queue, and the monitor watches that loop (`start()`):
//   - one: a task on the main actor computes M ms (default 800) in `holdMainActor(milliseconds:)`;
//   - many: N tasks (default 2,000) made at once in one block on the main queue, each computing
//     0.5 ms on the main actor in `shortMainActorJob()`;
//   - saturated: the main actor 90 % busy for 5 s, one task computing 150 ms (under the
//     threshold, past half of it: a near miss) in `nearMissMainActorJob()` every 166.7 ms, 30 of
//     them; then one computing M ms (default 400) in `holdMainActor(milliseconds:)`.
//   Exits once every job ran and a report is written (or 10 s passed), printing one JSON line: the
//   reports written and the main-actor jobs that ran.

let mainActorJobsRan = Atomic<Int>(0)

@MainActor @inline(never)
func holdMainActor(milliseconds: Int) {
    _ = spinComputing(seconds: Double(milliseconds) / 1000)
    mainActorJobsRan.add(1, ordering: .relaxed)
}

@MainActor @inline(never)
func nearMissMainActorJob() {
    _ = spinComputing(seconds: 0.150)
    mainActorJobsRan.add(1, ordering: .relaxed)
}

@MainActor @inline(never)
func shortMainActorJob() {
    _ = spinComputing(seconds: 0.0005)
    mainActorJobsRan.add(1, ordering: .relaxed)
}

func runMainActor(_ options: Options) -> Never {
    guard ["one", "many", "saturated"].contains(options.mode) else { fail("mainactor takes --mode one|many|saturated") }
    guard options.source == "run-loop" || options.source == "main-queue" else { fail("mainactor takes --source run-loop|main-queue") }
    let onRunLoop = options.source == "run-loop"
    var configuration = HangMonitor.Configuration(serviceName: "mainactor", threshold: .milliseconds(200), reportDirectory: options.reports)
    configuration.repeatWindow = .zero
    let monitor = startedMonitor(configuration) { onRunLoop ? try $0.start() : try $0.startWatchingMainQueue() }
    let count = options.count > 1 ? options.count : 2_000
    let milliseconds = options.milliseconds > 0 ? options.milliseconds : options.mode == "saturated" ? 400 : 800
    Thread {
        // The monitor's first pings answered (or its loop attached), its probe on the main actor run.
        usleep(600_000)
        if options.mode == "one" {
            Task { @MainActor in holdMainActor(milliseconds: milliseconds) }
        } else if options.mode == "saturated" {
            // Started on a steady clock, so that a late start does not bunch the jobs up.
            let start = DispatchTime.now().uptimeNanoseconds
            for index in 0..<30 {
                let due = start + UInt64(index) * 166_667_000
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(useconds_t((due - now) / 1000)) }
                Task { @MainActor in nearMissMainActorJob() }
            }
            let due = start + 30 * 166_667_000
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(useconds_t((due - now) / 1000)) }
            Task { @MainActor in holdMainActor(milliseconds: milliseconds) }
        } else {
            // Made in one block on the main queue: every job is queued before the queue can run
            // any, and before the monitor's next ping.
            DispatchQueue.main.async {
                for _ in 0..<count { Task { @MainActor in shortMainActorJob() } }
            }
        }
        // Every job run, then the hang's end (the next ping answered) and its final report.
        let expected = options.mode == "one" ? 1 : options.mode == "saturated" ? 31 : count
        let deadline = Date().addingTimeInterval(10)
        while mainActorJobsRan.load(ordering: .relaxed) < expected && Date() < deadline { usleep(20_000) }
        while monitor.statistics.reportsWritten + monitor.statistics.writeFailures < 1 && Date() < deadline { usleep(20_000) }
        usleep(500_000)
        monitor.stop()
        print("{\"reportsWritten\":\(monitor.statistics.reportsWritten),\"ran\":\(mainActorJobsRan.load(ordering: .relaxed))}")
        exit(0)
    }.start()
    if onRunLoop {
        while true { _ = RunLoop.main.run(mode: .default, before: .distantFuture) }
    }
    dispatchMain()
}
