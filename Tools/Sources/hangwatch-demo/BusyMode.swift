import Foundation
import HangWatch

/// `--busy`: RunLoop.main (already watched) kept about half busy by a repeating timer whose every
/// firing works 20 ms, the next one 20 ms after it returns (never near the 250 ms threshold: no
/// report), and a serial queue watched by a second monitor of the same service (a source that keeps
/// no flight recorder), until the process is killed. What `hangwatch dump --recent PID` is for: the
/// loop's last 5 s without a hang.
func runBusy(configuration: HangMonitor.Configuration, reportDirectory: String) -> Never {
    let queue = DispatchQueue(label: "demo.inventory")
    let queueMonitor: HangMonitor
    do {
        queueMonitor = try HangMonitor(configuration: configuration)
        try queueMonitor.start(queue: queue)
    } catch {
        FileHandle.standardError.write(Data("hangwatch-demo: \(error)\n".utf8))
        exit(1)
    }
    // Written at once (stdout to a pipe is buffered): a test waits for it.
    FileHandle.standardOutput.write(
        Data("HangWatch demo: RunLoop.main about half busy (20 ms jobs), and queue demo.inventory, watched until killed (pid \(getpid())), reports in \(reportDirectory)\n".utf8))
    let timer = Timer(fire: Date().addingTimeInterval(0.02), interval: 0.02, repeats: true) { _ in
        _ = DemoService.recomputePricing(milliseconds: 20)
    }
    RunLoop.main.add(timer, forMode: .default)
    withExtendedLifetime(queueMonitor) { RunLoop.main.run() }
    exit(0)
}
