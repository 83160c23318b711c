import HangWatchReport

/// What a task dump says first, from the tasks it built: every wait cycle, every actor with tasks
/// queued (and who holds it), the folds of tasks waiting on continuations seen waiting at an
/// earlier dump (with how long: the CLI says those past its bound), and tasks waiting for a pool
/// thread while pool threads are blocked in system calls. Pure.
enum TaskFindings {
    static func make(
        dump: HangReport.TaskDump, cycles: [[TaskWaitGraph.Node]], idOf: [UInt: UInt64], blockedPoolThreads: [Int32]
    ) -> [HangReport.TaskFinding] {
        var findings: [HangReport.TaskFinding] = []
        for cycle in cycles {
            var finding = HangReport.TaskFinding(kind: "cycle")
            finding.steps = cycle.map { node in
                switch node {
                case .task(let address): HangReport.TaskFinding.Step(task: idOf[address])
                case .actor(let address): HangReport.TaskFinding.Step(actor: Hex.format(address))
                }
            }
            let actors = finding.steps?.compactMap(\.actor) ?? []
            finding.actor = actors.first
            finding.threads = dump.actors.filter { actors.contains($0.address) }.compactMap(\.holderThread)
            findings.append(finding)
        }
        for actor in dump.actors where !actor.queue.isEmpty {
            var finding = HangReport.TaskFinding(kind: "actor held")
            finding.actor = actor.address
            finding.tasks = (actor.holder.map { [$0] } ?? []) + actor.queue
            finding.count = actor.queue.count
            finding.threads = actor.holderThread.map { [$0] }
            findings.append(finding)
        }
        for (index, fold) in dump.folds.enumerated() where fold.awaits == "continuation" {
            guard let unchanged = fold.unchangedMs else { continue }
            var finding = HangReport.TaskFinding(kind: "continuations")
            finding.fold = index
            finding.count = fold.count
            finding.unchangedMs = unchanged
            findings.append(finding)
        }
        let waitingForPool = dump.tasks.filter { $0.state == TaskState.enqueued.rawValue && $0.awaits?.kind == "pool thread" }
        if !waitingForPool.isEmpty, !blockedPoolThreads.isEmpty {
            var finding = HangReport.TaskFinding(kind: "pool starved")
            finding.count = waitingForPool.count
            finding.tasks = waitingForPool.map(\.id)
            finding.threads = blockedPoolThreads
            findings.append(finding)
        }
        return findings
    }
}
