import Foundation
import HangWatch

// `hangwatch-stackcorpus service`: the corpus's call sites as hangs of a monitored service. The main
// thread runs RunLoop.main under a HangMonitor (public API, default limits: repeat folding and the
// rate limit on); each case in turn hangs the loop for --hang-ms (600 ms for the clock-reading hot
// loop) and is then released. With --rounds N each case hangs N times, in a shuffled order.
// Prints one JSON object: the order of the hangs, each case's call chain (innermost first) and
// how many blocking calls returned EINTR (a monitor must cause none).

struct ServiceOptions {
    var reports = ""
    var rounds = 1
    var cases: Set<String>?
    var thresholdMilliseconds = 250
    var hangMilliseconds = 400
}

func parseServiceOptions(_ arguments: ArraySlice<String>) -> ServiceOptions {
    var options = ServiceOptions()
    var arguments = arguments
    while let name = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(name) needs a value", code: 2) }
        switch name {
        case "--reports": options.reports = value
        case "--rounds": options.rounds = Int(value) ?? 0
        case "--cases": options.cases = Set(value.split(separator: ",").map(String.init))
        case "--threshold-ms": options.thresholdMilliseconds = Int(value) ?? 0
        case "--hang-ms": options.hangMilliseconds = Int(value) ?? 0
        default: fail("unknown option \(name)", code: 2)
        }
    }
    guard !options.reports.isEmpty else { fail("--reports is required", code: 2) }
    guard options.rounds > 0, options.thresholdMilliseconds > 0, options.hangMilliseconds > options.thresholdMilliseconds else {
        fail("--rounds must be positive and --hang-ms longer than --threshold-ms", code: 2)
    }
    return options
}

func runService(_ options: ServiceOptions) -> Never {
    let monitor: HangMonitor
    do {
        monitor = try HangMonitor(
            configuration: .init(
                serviceName: "corpus", threshold: .milliseconds(options.thresholdMilliseconds), reportDirectory: options.reports))
        try monitor.start()
    } catch {
        fail("the monitor did not start: \(error)", code: 3)
    }
    let schedule = corpusCases.filter { !$0.onEventLoop && options.cases?.contains($0.name) ?? true }
        .flatMap { corpusCase in Array(repeating: corpusCase, count: options.rounds) }.shuffled()
    let controller = Thread {
        var order: [String] = []
        for corpusCase in schedule {
            released.store(false, ordering: .sequentiallyConsistent)
            entered.store(false, ordering: .sequentiallyConsistent)
            guard let run = try? corpusCase.prepare() else { fail("case \(corpusCase.name) could not be prepared", code: 3) }
            pending.withLock { $0 = run }
            let deadline = Date().addingTimeInterval(5)
            while !entered.load(ordering: .sequentiallyConsistent) && Date() < deadline { usleep(1000) }
            let hang = corpusCase.name == "cpu-reading-the-clock" ? max(600, options.hangMilliseconds) : options.hangMilliseconds
            usleep(useconds_t(hang * 1000))
            released.store(true, ordering: .sequentiallyConsistent)
            run.release()
            guard finished.wait(timeout: .now() + 10) == .success else { fail("case \(corpusCase.name) did not return", code: 3) }
            order.append(corpusCase.name)
            // Idle between hangs: the loop goes back to sleep (its 5 ms driver timer was rescheduled
            // into the future), so each hang ends and the next begins in an iteration of its own.
            usleep(20_000)
        }
        monitor.stop()
        var chains: [String: [String]] = [:]
        for corpusCase in schedule { chains[corpusCase.name] = corpusCase.chain }
        let summary: [String: Any] = ["hangs": order, "chains": chains, "interruptions": interruptions.load(ordering: .relaxed)]
        let data = try! JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
        exit(0)
    }
    controller.stackSize = 4 << 20
    controller.start()
    RunLoop.main.run()
    exit(0)
}
