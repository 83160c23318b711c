/// What the watchdog reads of a hung thread's labels (`HangMonitor.withLabels`): the sets its
/// current task put in effect, then the sets the thread put in effect itself (inner: they win),
/// outermost first. A thread that never used labels, runs no task with labels, or whose current
/// task cannot be read has none.
enum LabelsInEffect {
    /// The sets in effect on `thread` now. `taskID`: the task it runs, when the caller knows it
    /// (the pool watch's look); else read from the thread's current-task word, where that word is
    /// known (found by the thread itself inside a labelled task, or by the pool's attach job).
    static func read(_ thread: MonitoredThread, taskID known: UInt64? = nil) -> [[String: String]] {
        let labelled = UnsafeLabelThreads.thread(tid: thread.tid)
        var sets: [[String: String]] = []
        if let task = known ?? currentTask(of: thread, labelled: labelled), task != 0 {
            sets = UnsafeTaskLabelTable.shared.snapshot(task)
        }
        if let labelled { sets += labelled.stack.snapshot() }
        return sets
    }

    private static func currentTask(of thread: MonitoredThread, labelled: LabelThread?) -> UInt64? {
        var word = labelled?.taskWord.load(ordering: .relaxed) ?? 0
        if word == 0, let attached = UnsafePoolThreadAttachments.shared.thread(tid: thread.tid, startTimeTicks: thread.startTimeTicks) {
            word = attached.taskSlot ?? 0
        }
        return word == 0 ? nil : UnsafeCurrentTaskSlot.taskID(slot: word)
    }
}
