import Dispatch
import Foundation
import HangWatch

// hangwatch-tasks: a service whose state is its Swift tasks (issue 61), for the tests of
// `hangwatch dump --tasks` and the oracle test (release build, not a product). It monitors its
// main queue (so it answers dumps), parks the tasks, prints one JSON line, and waits to be killed.
//
//   hangwatch-tasks --reports DIR [--orders 1000] [--sleepers 10] [--sleep-s 600] [--no-group] [--no-labels]
//
// The line: {"pid": …, "orders": …, "sleepers": …, "holderTid": … (the thread blocked holding
// actor Ledger, 0 without the group)}.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("hangwatch-tasks: \(message)\n".utf8))
    exit(2)
}

var arguments = CommandLine.arguments.dropFirst()
var reports = ""
var scenario = Scenario()
while let name = arguments.popFirst() {
    switch name {
    case "--no-group": scenario.group = false
    case "--no-labels": scenario.labels = false
    default:
        guard let value = arguments.popFirst() else { fail("\(name) needs a value") }
        switch name {
        case "--reports": reports = value
        case "--orders": scenario.orders = Int(value) ?? -1
        case "--sleepers": scenario.sleepers = Int(value) ?? -1
        case "--sleep-s": scenario.sleepSeconds = Int(value) ?? -1
        default: fail("unknown option \(name)")
        }
    }
}
guard !reports.isEmpty, scenario.orders >= 0, scenario.sleepers >= 0, scenario.sleepSeconds > 0 else {
    fail("usage: hangwatch-tasks --reports DIR [--orders N] [--sleepers N] [--sleep-s S] [--no-group] [--no-labels]")
}

// Parked first: the main queue is busy meanwhile, which a monitor would report as a hang.
scenario.start()
let monitor: HangMonitor
do {
    monitor = try HangMonitor(configuration: .init(serviceName: "tasks", threshold: .milliseconds(250), reportDirectory: reports))
    try monitor.startWatchingMainQueue()
} catch {
    fail("the monitor did not start: \(error)")
}
let line = "{\"pid\": \(getpid()), \"orders\": \(scenario.orders), \"sleepers\": \(scenario.sleepers), \"holderTid\": \(holderThread.load(ordering: .acquiring))}\n"
FileHandle.standardOutput.write(Data(line.utf8))
dispatchMain()
