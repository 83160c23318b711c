import Foundation
import HangWatch

/// `idle`: a run-loop service at rest, monitored with the default configuration (heartbeat, pool
/// watch): `HangMonitor.start()` on `RunLoop.main`, then the loop sleeps for `--seconds` with
/// nothing to do, and the monitor stops. What an outside counter reads of its threads' wake-ups
/// (bench figure 3b) is then the monitor's own cost at rest; `--mode unmonitored` is the same
/// service without the monitor, the baseline. A monitored one prints what it counted at the end.
func runIdle(_ options: Options) -> Never {
    var configuration = HangMonitor.Configuration(serviceName: "idle", reportDirectory: options.reports)
    // `--mode no-pool`: the same without the pool watch (where the process's libdispatch wake-ups come from).
    if options.mode == "no-pool" { configuration.watchesConcurrencyPool = false }
    let monitor = options.mode != "unmonitored" ? startedMonitor(configuration) : nil
    // Told on stdout, so the counter knows the monitor runs.
    FileHandle.standardOutput.write(Data("started\n".utf8))
    RunLoop.main.run(until: Date().addingTimeInterval(options.seconds))
    monitor?.stop()
    // What it counted (a frozen idle service must count nothing).
    if let monitor { print("{\"hangsDetected\":\(monitor.statistics.hangsDetected),\"reportsWritten\":\(monitor.statistics.reportsWritten)}") }
    exit(0)
}
