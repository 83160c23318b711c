import Foundation
import HangWatch
import Synchronization

// hangwatch-waits: a service whose main thread (RunLoop.main, under a HangMonitor) waits on an
// object another thread or process holds, one kind per run; the tests of `waitsFor` run it in a
// release build (not a product).
//
//   hangwatch-waits CASE --reports DIR [--threshold-ms 250] [--hold-ms 1500] [--stay-ms 300]
//
// CASE: mutex (an NSLock held by thread "cache-refresh"), timed-mutex (pthread_mutex_timedlock of
// a mutex thread "cache-refresh" holds), nslock-before (NSLock.lock(before:) of the held NSLock),
// timed-rwlock (pthread_rwlock_timedrdlock of the write-held rwlock), condition-mutex (an
// NSCondition's wait, woken while thread "cache-refresh" keeps its mutex: the re-acquire),
// I/O: tcp-process, unix-thread, pipe, sleep, poll, syn-sent, unix-process (IOWaitScenario.swift),
// swift-mutex (a Synchronization.Mutex), computing-mutex and computing-swift-mutex (the NSLock or
// the Mutex held by thread "eval-ledger" computing in computeLedger), computing-worker-mutex (the
// NSLock held by a libdispatch worker computing),
// rwlock (write-held), join (pthread_join of thread "cruncher"), child (waitpid of a child
// process), file-lock (flock of a file another process holds), semaphore (a DispatchSemaphore
// nobody signals in time: no owner), deadlock (the main thread and thread "deadlock-peer" take
// two locks in opposite orders: it never ends; the test kills it), timed-deadlock (the same, the
// second locks taken with NSLock.lock(before:) an hour away), pool-mutex (a Task on the
// cooperative pool waits for an NSLock held by thread "cache-refresh": a pool-job report).
//
// Prints one JSON line once the holder holds: {"holderTid": …, "holderPid": …, "waiterTid": …},
// then waits; exits 0 after the hang's report is written (the deadlock never does).

func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("hangwatch-waits: \(message)\n".utf8))
    exit(code)
}

var arguments = CommandLine.arguments.dropFirst()
guard let waitCase = arguments.popFirst() else { fail("usage: hangwatch-waits CASE --reports DIR") }
var reports = ""
var thresholdMilliseconds = 250
var holdMilliseconds = 1500
/// How long the service stays up, monitored, once the hang is over (a dump, or the agent, may
/// look at it meanwhile).
var stayMilliseconds = 300
while let name = arguments.popFirst() {
    guard let value = arguments.popFirst() else { fail("\(name) needs a value") }
    switch name {
    case "--reports": reports = value
    case "--threshold-ms": thresholdMilliseconds = Int(value) ?? 0
    case "--hold-ms": holdMilliseconds = Int(value) ?? 0
    case "--stay-ms": stayMilliseconds = Int(value) ?? -1
    default: fail("unknown option \(name)")
    }
}
guard !reports.isEmpty, thresholdMilliseconds > 0, holdMilliseconds > thresholdMilliseconds, stayMilliseconds >= 0 else { fail("bad options") }

let monitor: HangMonitor
do {
    var configuration = HangMonitor.Configuration(
        serviceName: "waits", threshold: .milliseconds(thresholdMilliseconds), reportDirectory: reports)
    configuration.repeatWindow = .zero
    monitor = try HangMonitor(configuration: configuration)
    try monitor.start()
} catch {
    fail("the monitor did not start: \(error)", code: 3)
}

let scenario = WaitScenario(case: waitCase, holdMicroseconds: UInt32(holdMilliseconds * 1000))
let stay = Double(stayMilliseconds) / 1000
RunLoop.main.add(
    Timer(fire: Date().addingTimeInterval(0.2), interval: 0, repeats: false) { _ in
        scenario.run()
        // The hang is over: let the monitor write its report (and stay as long as asked), then leave.
        FileHandle.standardOutput.write(Data("hang over\n".utf8))
        RunLoop.main.add(
            Timer(fire: Date().addingTimeInterval(stay), interval: 0, repeats: false) { _ in
                monitor.stop()
                exit(0)
            }, forMode: .default)
    }, forMode: .default)
RunLoop.main.run()
