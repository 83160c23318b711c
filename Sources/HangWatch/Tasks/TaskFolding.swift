import HangWatchReport

/// Identical tasks folded, as Go's goroutine dumps are read: tasks with the same state, the same
/// kind of wait (the same actor, for tasks queued on one) and the same chain (the same frames:
/// the same functions) are one fold, with every member's id. Largest first, then by the smallest
/// id. `byEntry` folds by where each resumes too (a hang report's queued tasks: a task not yet
/// started has only the runtime's adapter in its chain, its own function is where it resumes).
/// Pure.
enum TaskFolding {
    struct Key: Hashable {
        var state: String
        var awaits: String?
        var chain: [Int]
        var chainEnd: String
        var entry: Int?
    }

    static func key(_ task: HangReport.TaskEntry, byEntry: Bool = false) -> Key {
        var awaits = task.awaits?.kind
        if let actor = task.awaits?.actor { awaits = "actor \(actor)" }
        // A chain folds what differs only in where it resumes next when it has one; a task with
        // no chain (not started, running) folds by where it resumes.
        return Key(state: task.state, awaits: awaits, chain: task.chain, chainEnd: task.chainEnd, entry: task.chain.isEmpty || byEntry ? task.entry : nil)
    }

    static func fold(_ tasks: [HangReport.TaskEntry], byEntry: Bool = false) -> [HangReport.TaskFold] {
        var order: [Key] = []
        var members: [Key: [HangReport.TaskEntry]] = [:]
        for task in tasks {
            let key = key(task, byEntry: byEntry)
            if members[key] == nil { order.append(key) }
            members[key, default: []].append(task)
        }
        let folds = order.map { key -> HangReport.TaskFold in
            let group = members[key]!
            var fold = HangReport.TaskFold(
                count: group.count, state: key.state, awaits: key.awaits, chain: key.chain, chainEnd: key.chainEnd, entry: key.entry,
                ids: group.map(\.id).sorted())
            fold.unchangedMs = group.compactMap(\.unchangedMs).max()
            let lefts = group.compactMap { $0.awaits?.leftMs }
            if let least = lefts.min(), let most = lefts.max() { fold.leftMs = [least, most] }
            return fold
        }
        return folds.sorted { ($0.count, $1.ids.first ?? 0) > ($1.count, $0.ids.first ?? 0) }
    }
}
