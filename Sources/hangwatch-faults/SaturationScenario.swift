import Foundation
import HangWatch

/// `saturate`: a run-loop service kept busy below its hang threshold, for the live test of the
/// saturation alert (Tools' FleetExportTests). `HangMonitor.start()` on `RunLoop.main` (threshold
/// 200 ms, a heartbeat every second: the page the agent reads the busy ratio from), then a timer
/// keeps the loop busy `--ms` of every 20 ms (default 19: 95 %) for `--seconds`, in pieces of 1 to
/// 50 ms, far under the threshold: never a hang. The timer fires every millisecond, and a firing
/// computes what the loop owes of its share since the share began once that is 1 ms or more, so
/// wake-ups that a busy machine makes late do not thin the share out (19 ms per firing of a 20 ms
/// timer read 0.75, not 0.95, beside a build: a firing made late loses its whole period). With
/// `--file PATH` the share is 2 ms of every 20 (10 %) until PATH exists, then `--ms`: a test sees
/// the calm loop first and says when it saturates. Prints the monitor's statistics as one JSON
/// line at the end.
func runSaturate(_ options: Options) -> Never {
    let busyMilliseconds = options.milliseconds == 0 ? 19 : options.milliseconds
    guard busyMilliseconds < 20 else { fail("saturate: --ms takes 1 to 19 (ms of each 20)") }
    var configuration = HangMonitor.Configuration(
        serviceName: "saturate", threshold: .milliseconds(200), reportDirectory: options.reports)
    configuration.heartbeatInterval = .seconds(1)
    let monitor = startedMonitor(configuration)
    let saturatedShare = Double(busyMilliseconds) / 20
    let file = options.file
    // Touched only on the loop's thread: the share in force, since when, and the time computed since.
    nonisolated(unsafe) var share = -1.0
    nonisolated(unsafe) var since: UInt64 = 0
    nonisolated(unsafe) var computed: UInt64 = 0
    nonisolated(unsafe) var sink: UInt64 = 0
    let timer = Timer(fire: Date(), interval: 0.001, repeats: true) { _ in
        let now = DispatchTime.now().uptimeNanoseconds
        let wanted = file.isEmpty || access(file, F_OK) == 0 ? saturatedShare : 0.1
        if wanted != share { (share, since, computed) = (wanted, now, 0) }
        let owed = share * Double(now - since) - Double(computed)
        guard owed >= 1_000_000 else { return }
        sink &+= spinComputing(seconds: min(owed, 50_000_000) / 1e9)
        computed += DispatchTime.now().uptimeNanoseconds - now
    }
    RunLoop.main.add(timer, forMode: .default)
    RunLoop.main.run(until: Date().addingTimeInterval(options.seconds))
    timer.invalidate()
    monitor.stop()
    let statistics = monitor.statistics
    print("{\"hangsDetected\":\(statistics.hangsDetected),\"reportsWritten\":\(statistics.reportsWritten),\"sink\":\(sink % 2)}")
    exit(0)
}
