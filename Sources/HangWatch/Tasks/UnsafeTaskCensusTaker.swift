@_spi(Internal) import HangWatchReport

/// Takes a task dump's census on the watchdog's thread: the runtime's words and layout gate
/// (`TaskLayout.recognise`), the heap scan for the task metadata (`UnsafeTaskHeapScan`), each
/// candidate read and checked (`UnsafeTaskReader`), each thread's task and executor
/// (`UnsafeTaskThreadWords`), the actors tasks wait for (`UnsafeActorReader`), Task.sleep's time
/// left (`UnsafeDispatchTimers`), each task's labels (`UnsafeTaskLabelTable`), and the self-test on
/// HangWatch's probe task. Nothing is stopped; every read goes through the kernel. Bounded: at most
/// `maxCandidates` candidates, and `budgetNanoseconds` for the scans and reads together (past
/// either, the census says where it stopped). Unsafe: raw memory of the whole process.
struct UnsafeTaskCensusTaker {
    var maxCandidates = 2_000_000
    var budgetNanoseconds: UInt64 = 10_000_000_000

    func take(probe: UnsafeTaskDumpProbe.Parked?, remembered: TaskDumpSelfTest?) -> TaskCensus {
        let words = UnsafeTaskRuntime.words()
        var census = TaskCensus(layout: TaskLayout.recognise(words))
        guard case .success(let layout) = census.layout else { return census }
        let started = UnsafeClock.monotonicNanoseconds()
        let deadline = started + budgetNanoseconds
        let mappings = TaskHeapMapping.parse(maps: SmallFile.text("/proc/self/maps", limit: 64 << 20) ?? "")
        let scan = UnsafeTaskHeapScan(needles: [words.taskMetadata], maxHits: maxCandidates, deadlineNanoseconds: deadline).scan(mappings)
        census.mappings = scan.mappings
        census.bytes = scan.bytes
        census.candidates = scan.hits[0].count
        census.stoppedEarly = scan.stoppedEarly.map { "the scan stopped \($0)" }
        let scanned = UnsafeClock.monotonicNanoseconds()
        census.scanNanoseconds = scanned - started
        read(scan.hits[0], layout: layout, words: words, deadline: deadline, into: &census)
        census.readNanoseconds = UnsafeClock.monotonicNanoseconds() - scanned
        census.threads = UnsafeTaskThreadWords.lookAll(stacks: StackMapping.readAll())
        let reader = UnsafeActorReader(layout: layout)
        for task in census.tasks {
            guard case .executor(let identity, 0) = task.dependency, identity != 0, census.actors[identity] == nil else { continue }
            census.actors[identity] = reader.read(identity)
        }
        sleeps(layout: layout, words: words, mappings: mappings, deadline: deadline, into: &census)
        for task in census.tasks {
            let sets = UnsafeTaskLabelTable.shared.snapshot(task.id)
            if !sets.isEmpty { census.labels[task.id] = sets }
        }
        census.probe = probe?.task
        if let probe {
            census.selfTest = TaskDumpSelfTest.judge(
                probe: probe.task, id: probe.id, read: census.tasks.first { $0.address == probe.task }, layout: layout)
            if !probe.learnt, census.selfTest == .passed { census.selfTest = .notRun("HangWatch's probe could not learn where threads keep their words") }
        } else {
            census.selfTest = remembered ?? .notRun("HangWatch's probe task did not park in time (is every pool thread busy?)")
        }
        return census
    }

    /// Reads every candidate; a second live task with an id already read is a copy of one (counted).
    private func read(_ candidates: [UInt], layout: TaskLayout, words: UnsafeTaskRuntime.Words, deadline: UInt64, into census: inout TaskCensus) {
        var reader = UnsafeTaskReader(layout: layout, words: words)
        defer { reader.release() }
        var ids = Set<UInt64>()
        census.tasks.reserveCapacity(candidates.count)
        for (index, candidate) in candidates.enumerated() {
            if index & 1023 == 1023, UnsafeClock.monotonicNanoseconds() >= deadline {
                census.stoppedEarly = "the reads stopped at their time bound, after \(index) of \(candidates.count) candidates"
                break
            }
            switch reader.read(candidate) {
            case .success(let task):
                if ids.insert(task.id).inserted {
                    census.tasks.append(task)
                } else {
                    census.rejected[.duplicateID, default: 0] += 1
                }
            case .failure(let why):
                census.rejected[why, default: 0] += 1
            }
        }
    }

    /// Task.sleep: each wake task's sleeper, and its time left from libdispatch's timer.
    private func sleeps(layout: TaskLayout, words: UnsafeTaskRuntime.Words, mappings: [TaskHeapMapping], deadline: UInt64, into census: inout TaskCensus) {
        let byAddress = Dictionary(census.tasks.map { ($0.address, $0) }, uniquingKeysWith: { first, _ in first })
        var wakes: [UInt: UInt] = [:]
        for task in census.tasks where task.notStarted && task.dependency == .none && task.children.isEmpty {
            guard let sleeper = UnsafeDispatchTimers.sleeper(ofWakeContext: task.resumeContext), let asleep = byAddress[sleeper],
                case .continuation = asleep.dependency
            else { continue }
            wakes[task.address] = sleeper
        }
        guard !wakes.isEmpty else { return }
        let clocks = UnsafeDispatchTimers.clocks()
        let suspended = clocks.boot > clocks.monotonic + 1_000_000_000
        let dues = suspended ? [:] : UnsafeDispatchTimers.dues(wakeTasks: Array(wakes.keys), mappings: mappings, deadlineNanoseconds: deadline)
        for (wake, sleeper) in wakes {
            var sleep = TaskCensus.Sleep(wake: wake)
            if let target = dues[wake] {
                sleep.leftNanoseconds = Int64(bitPattern: target &- clocks.boot)
            } else {
                sleep.unknown =
                    suspended
                    ? "time left unknown: the machine was suspended, and the sleep's clock is not known"
                    : "time left unknown: its timer was not found in libdispatch"
            }
            census.sleeps[sleeper] = sleep
        }
    }
}
