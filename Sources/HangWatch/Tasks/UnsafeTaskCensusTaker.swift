@_spi(Internal) import HangWatchReport

/// Takes a task dump's census on the watchdog's thread: the runtime's words and layout gate
/// (`TaskLayout.recognise`), the heap scan for the task metadata (`UnsafeTaskHeapScan`), each
/// candidate read from the scan's copy and checked (`UnsafeTaskReader`), then checked again against
/// the memory now, in batches (`UnsafeTaskVerification`), each thread's task and executor
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
        // Each candidate is read while its chunk's copy is at hand (its header, records and first
        // contexts lie in it), then all are checked against the memory as it is now, in batches.
        var reader = UnsafeTaskReader(layout: layout, words: words)
        defer { reader.release() }
        var read: [TaskSnapshot] = []
        var rejected: [TaskRejection: Int] = [:]
        var ids = Set<UInt64>()
        var readNanoseconds: UInt64 = 0
        let scan = UnsafeTaskHeapScan(needles: [words.taskMetadata], maxHits: maxCandidates, deadlineNanoseconds: deadline).scan(mappings) {
            base, bytes, hits in
            guard !hits.isEmpty else { return }
            let started = UnsafeClock.monotonicNanoseconds()
            reader.view((base, bytes))
            for candidate in hits {
                switch reader.read(candidate) {
                case .success(let task) where ids.insert(task.id).inserted: read.append(task)
                case .success: rejected[.duplicateID, default: 0] += 1
                case .failure(let why): rejected[why, default: 0] += 1
                }
            }
            readNanoseconds += UnsafeClock.monotonicNanoseconds() - started
        }
        census.mappings = scan.mappings
        census.bytes = scan.bytes
        census.candidates = scan.hits[0].count
        census.stoppedEarly = scan.stoppedEarly.map { "the scan stopped \($0)" }
        let verifying = UnsafeClock.monotonicNanoseconds()
        census.tasks = UnsafeTaskVerification.verify(read, reader: &reader, layout: layout, rejected: &rejected)
        census.rejected = rejected
        readNanoseconds += UnsafeClock.monotonicNanoseconds() - verifying
        census.readNanoseconds = readNanoseconds
        census.scanNanoseconds = UnsafeClock.monotonicNanoseconds() - started - readNanoseconds
        census.threads = UnsafeTaskThreadWords.lookAll(stacks: StackMapping.readAll())
        let actors = UnsafeActorReader(layout: layout)
        for task in census.tasks {
            guard case .executor(let identity, 0) = task.dependency, identity != 0, census.actors[identity] == nil else { continue }
            census.actors[identity] = actors.read(identity)
        }
        sleeps(layout: layout, words: words, mappings: mappings, deadline: deadline, into: &census)
        for task in census.tasks {
            let sets = UnsafeTaskLabelTable.shared.snapshot(task.id)
            if !sets.isEmpty { census.labels[task.id] = sets }
        }
        census.probe = probe?.task
        if let probe {
            let found = census.tasks.first { $0.address == probe.task }
            census.selfTest = TaskDumpSelfTest.judge(probe: probe.task, id: probe.id, read: found, layout: layout)
            if found == nil, census.stoppedEarly != nil {
                census.selfTest = .notRun("the dump stopped at its bound before it reached HangWatch's probe task")
            }
            if !probe.learnt, census.selfTest == .passed { census.selfTest = .notRun("HangWatch's probe could not learn where threads keep their words") }
        } else {
            census.selfTest = remembered ?? .notRun("HangWatch's probe task did not park in time (is every pool thread busy?)")
        }
        return census
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
