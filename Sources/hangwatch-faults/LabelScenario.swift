import Foundation
import HangWatch
import Synchronization

// hangwatch-faults labels --reports DIR
//   A monitor on RunLoop.main (threshold 200 ms, the pool watch on, no folding, no rate limit),
//   then eight hangs one after the other, each in a function of its own:
//   - spinLabelledOnRunLoop: a timer's callback computes 400 ms inside
//     withLabels(["route": "run-loop", "tenant": "acme"]);
//   - spinUnlabelledOnRunLoop: right after, the same without labels;
//   - spinNestedOnRunLoop: inside withLabels(["route": "outer", "tenant": "acme"]) and, in it,
//     withLabels(["route": "inner", "request": "42"]);
//   - spinOnMainActor: a main-actor task computes 400 ms inside await withLabels(["route": "main-actor"]);
//   - blockLabelledPoolJob: a task on the pool sleeps 600 ms (usleep) inside
//     await withLabels(["route": "pool-job", "traceparent": TRACEPARENT]);
//   - blockUnlabelledPoolJob: right after, the same task sleeps again outside them;
//   - blockAfterHop: a task enters await withLabels(["route": "after-hop"]) on one pool thread,
//     awaits until it resumes on another, and sleeps 600 ms there;
//   - blockSyncLabelsInPoolJob: a task sleeps inside the synchronous withLabels(["route": "sync-in-task"]).
//   Prints one JSON line: the hop's thread ids (where it entered, where it hung) and the
//   monitor's statistics. Exits 0 once every report is written.

let labelScenarioTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

@inline(never)
func spinLabelledOnRunLoop() -> UInt64 { spinComputing(seconds: 0.4) }
@inline(never)
func spinUnlabelledOnRunLoop() -> UInt64 { spinComputing(seconds: 0.4) }
@inline(never)
func spinNestedOnRunLoop() -> UInt64 { spinComputing(seconds: 0.4) }
@inline(never)
func spinOnMainActor() -> UInt64 { spinComputing(seconds: 0.4) }
@inline(never)
func blockLabelledPoolJob() { usleep(600_000) }
@inline(never)
func blockUnlabelledPoolJob() { usleep(600_000) }
@inline(never)
func blockAfterHop() { usleep(600_000) }
@inline(never)
func blockSyncLabelsInPoolJob() { usleep(600_000) }

func runLabels(_ options: Options) -> Never {
    var configuration = HangMonitor.Configuration(serviceName: "labels", threshold: .milliseconds(200), reportDirectory: options.reports)
    configuration.repeatWindow = .zero
    configuration.reportsPerMinute = 1000
    configuration.reportBurst = 1000
    let monitor = startedMonitor(configuration)
    nonisolated(unsafe) var sink: UInt64 = 0
    /// Runs the loop until `count` reports are written in all (or 20 s passed).
    func waitFor(_ count: Int) {
        let deadline = Date().addingTimeInterval(20)
        while monitor.statistics.reportsWritten < count && Date() < deadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.02))
        }
        RunLoop.main.run(until: Date().addingTimeInterval(0.1))
    }
    func onTimer(_ body: @escaping @Sendable () -> Void) {
        RunLoop.main.add(Timer(fire: Date(), interval: 0, repeats: false) { _ in body() }, forMode: .default)
    }
    // Let the pool watch's probes attach the pool's threads, as in a service that ran tasks before.
    for _ in 0..<8 { Task.detached { _ = spinComputing(seconds: 0.002) } }
    RunLoop.main.run(until: Date().addingTimeInterval(0.8))

    onTimer { HangMonitor.withLabels(["route": "run-loop", "tenant": "acme"]) { sink &+= spinLabelledOnRunLoop() } }
    waitFor(1)
    onTimer { sink &+= spinUnlabelledOnRunLoop() }
    waitFor(2)
    onTimer {
        HangMonitor.withLabels(["route": "outer", "tenant": "acme"]) {
            HangMonitor.withLabels(["route": "inner", "request": "42"]) { sink &+= spinNestedOnRunLoop() }
        }
    }
    waitFor(3)
    Task { @MainActor in
        await HangMonitor.withLabels(["route": "main-actor"]) {
            await Task.yield()
            sink &+= spinOnMainActor()
        }
    }
    waitFor(4)
    Task.detached {
        await HangMonitor.withLabels(["route": "pool-job", "traceparent": labelScenarioTraceparent]) {
            await Task.yield()
            blockLabelledPoolJob()
        }
        blockUnlabelledPoolJob()
    }
    waitFor(6)
    let hop = Mutex<(entered: Int32, hung: Int32)>((0, 0))
    Task.detached {
        await HangMonitor.withLabels(["route": "after-hop"]) {
            let entered = currentThreadID()
            var now = entered
            for _ in 0..<400 where now == entered {
                try? await Task.sleep(for: .milliseconds(2))
                now = currentThreadID()
            }
            hop.withLock { $0 = (entered, now) }
            blockAfterHop()
        }
    }
    waitFor(7)
    Task.detached {
        await Task.yield()
        HangMonitor.withLabels(["route": "sync-in-task"]) { blockSyncLabelsInPoolJob() }
    }
    waitFor(8)
    monitor.stop()
    let threads = hop.withLock { $0 }
    let statistics = monitor.statistics
    print(
        "{\"hopEntered\":\(threads.entered),\"hopHung\":\(threads.hung),\"hangsDetected\":\(statistics.hangsDetected),"
            + "\"reportsWritten\":\(statistics.reportsWritten),\"sink\":\(sink % 2)}")
    exit(0)
}
