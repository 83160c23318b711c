import Foundation
import HangWatch

// hangwatch-rebuild-shop --reports DIR
//   A service on RunLoop.main (HangMonitor, threshold 150 ms, the pool watch on) that hangs twice
//   at each of its sites (Sites.swift), one hang after the other: two computing call paths to one
//   function, a sleep, a lock wait, and an async handler blocking a pool thread. The second hang
//   at a site folds into the first one's report as a repeat. Exits 0 once every report is written.
//   Built twice by RebuildGroupingTests: the second build adds code before the sites, and one
//   site of its own (Coupons.swift). The service's version comes from OTEL_RESOURCE_ATTRIBUTES.

guard CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--reports" else {
    FileHandle.standardError.write(Data("usage: hangwatch-rebuild-shop --reports DIR\n".utf8))
    exit(2)
}
var configuration = HangMonitor.Configuration(
    serviceName: "rebuild-shop", threshold: .milliseconds(150), reportDirectory: CommandLine.arguments[2])
configuration.sampleInterval = .milliseconds(20)
let monitor: HangMonitor
do {
    monitor = try HangMonitor(configuration: configuration)
    try monitor.start()
} catch {
    FileHandle.standardError.write(Data("hangwatch-rebuild-shop: \(error)\n".utf8))
    exit(3)
}
nonisolated(unsafe) var sink: UInt64 = 0

/// Runs the loop until `count` hangs were detected and handed on, and a while longer.
func settle(hangs count: Int) {
    let deadline = Date().addingTimeInterval(20)
    while monitor.statistics.hangsDetected < count && Date() < deadline {
        RunLoop.main.run(until: Date().addingTimeInterval(0.02))
    }
    RunLoop.main.run(until: Date().addingTimeInterval(0.3))
}

// Let the pool watch's probes attach the pool's threads, as in a service that ran tasks before.
for _ in 0..<8 { Task.detached { _ = spin(milliseconds: 2) } }
RunLoop.main.run(until: Date().addingTimeInterval(0.8))

var onLoop: [@Sendable () -> Void] = [
    { sink &+= Quotes.refresh() },
    { sink &+= Checkout.total() },
    { Audit.flush() },
    { Cache.waitForLock() },
]
#if REBUILD_VARIANT_2
// No closure literal here: one would renumber the closures after it (the timer's), and so change
// the names of every site's stack.
onLoop.append(Coupons.site)
#endif
var hangs = 0
for round in 0..<2 {
    for site in onLoop {
        RunLoop.main.add(Timer(fire: Date(), interval: 0, repeats: false) { _ in site() }, forMode: .default)
        hangs += 1
        settle(hangs: hangs)
    }
    Task.detached { await Inventory.handle() }
    hangs += 1
    settle(hangs: hangs)
    _ = round
}
monitor.stop()
#if REBUILD_VARIANT_2
if CommandLine.arguments.count > 99 { print(Padding.run()) }
#endif
print("{\"hangsDetected\":\(monitor.statistics.hangsDetected),\"reportsWritten\":\(monitor.statistics.reportsWritten),\"sink\":\(sink % 2)}")
exit(0)
