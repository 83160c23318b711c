import Foundation
import HangWatch
import HangWatchSymbolication
import Synchronization

// hangwatch-stackcorpus: the differential test of the blocked-thread unwinder (not a product).
//
// The main thread runs RunLoop.main; a timer callback runs one case at a time, which blocks the
// thread in a system call under a known call chain. A controller thread then, for each sample:
//   1. takes the thread's stack the way the watchdog does for a blocked thread (no signal: from
//      the stack pointer and program counter in /proc/self/task/<tid>/syscall);
//   2. takes the ground truth: a signal capture, the thread unwinding itself from its exact
//      registers (this cuts some calls short with EINTR; the cases just block again);
//   3. compares: `exact` (every frame equal), `truncated` (a prefix of the truth, marked
//      truncated), or `wrong` (any frame that differs, or a prefix not marked truncated).
//
//   hangwatch-stackcorpus [--samples N] [--cases a,b,...] [--json] [--verbose] [--no-prologue]
//   hangwatch-stackcorpus service --reports DIR [--rounds N] [--cases ...] [--threshold-ms T] [--hang-ms H]
//       (Service.swift: the same call sites as hangs of a monitored service)
//
// --no-prologue measures the frame-record method alone (as if no function had a fixed frame).
//
// Prints a table (or, with --json, one JSON object) of exact / truncated / wrong per case. Exit
// status: 0 when no sample was wrong, 1 otherwise, 2 for bad arguments, 3 when a case could not run.

struct Options {
    var samples = 20
    var cases: Set<String>?
    var json = false
    var verbose = false
    var prologues = true
}

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("hangwatch-stackcorpus: \(message)\n".utf8))
    exit(code)
}

func parseOptions() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst()
    while let name = arguments.popFirst() {
        switch name {
        case "--samples":
            guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else { fail("--samples needs a positive number", code: 2) }
            options.samples = value
        case "--cases":
            guard let value = arguments.popFirst() else { fail("--cases needs a list", code: 2) }
            options.cases = Set(value.split(separator: ",").map(String.init))
        case "--json": options.json = true
        case "--verbose": options.verbose = true
        case "--no-prologue": options.prologues = false
        default: fail("unknown option \(name)", code: 2)
        }
    }
    return options
}

mainThread = PthreadBox(value: pthread_self())

/// The run the main thread should start next, handed over by the controller.
let pending = Mutex<Run?>(nil)
let finished = DispatchSemaphore(value: 0)

// The main thread: a timer looks for a case to run every 5 ms, so each case runs in a timer
// callback under CFRunLoopRun, as a service's work does.
let driver = Timer(timeInterval: 0.005, repeats: true) { _ in
    guard let run = pending.withLock({ run -> Run? in
        defer { run = nil }
        return run
    }) else { return }
    run.block()
    if !run.completesItself { finished.signal() }
}
RunLoop.main.add(driver, forMode: .default)

if CommandLine.arguments.dropFirst().first == "service" {
    runService(parseServiceOptions(CommandLine.arguments.dropFirst(2)))
}

let options = parseOptions()
let signal = CaptureProbe.defaultSignal
do {
    try CaptureProbe.install(signal: signal)
} catch {
    fail("cannot install the capture handler: \(error)", code: 3)
}
let target = CaptureProbe.attachCurrentThread(signal: signal)
CaptureProbe.useProloguesForBlockedThreads(options.prologues)

let controller = Thread {
    let results = runCorpus(options: options, target: target)
    print(options.json ? results.json : results.table)
    exit(results.wrong == 0 ? 0 : 1)
}
controller.stackSize = 4 << 20
controller.start()
RunLoop.main.run()
