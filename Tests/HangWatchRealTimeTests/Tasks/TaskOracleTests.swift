import CRemoteMirror
import Foundation
@_spi(Internal) import HangWatchReport
import HangWatchTestSupport
import Testing

/// The oracle: the task dump of a live process against what the Swift runtime's own reflection
/// library (the toolchain's libswiftRemoteMirror, loaded with dlopen by this test) reads of the very
/// same tasks in the very same process, through its reader callbacks (process_vm_readv on the
/// service). Every task listed is given to `swift_reflection_asyncTaskInfo`; every actor a task
/// waits for to `swift_reflection_actorInfo` and its queue to `swift_reflection_nextJob`. Ten runs,
/// each a fresh service (a fresh heap). A future Swift that moves a field the dump reads fails here,
/// not in a user's dump.
///
/// What the 6.3.1 library is known to do, and how each comparison allows for it (read in its
/// code, and seen live):
/// 1. `ChildTasks`: it follows a status record's child list only when the *parent* is itself a
///    child task (it tests the parent's flags); for a top-level task it lists each record's first
///    child only. So a top-level task's mirror children must be some of ours (one per record at
///    most), a child task's must be all of ours.
/// 2. `MaxPriority` is never set (always 0): the dump's priorities are not compared (the runtime's
///    code is their check, docs/report-format.md).
/// 3. There is no `IsComplete` or `IsSuspended` in its struct: "suspended" is compared as neither
///    running nor enqueued.
/// 4. `swift_reflection_addImage` on a service's own executable crashed it (`readELF`): no image is
///    added; nothing compared needs one.
/// 5. A running task's async frames are not walked (its contexts are being rewritten): both say
///    none.
@Suite(.serialized) struct TaskOracleTests {
    static let mirror = "/opt/swift/usr/lib/swift/linux/libswiftRemoteMirror.so"

    // Skipped where the toolchain's reflection library is not installed (a host with only the
    // Swift runtime): nothing to compare with there.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: mirror), "no libswiftRemoteMirror.so in the toolchain"))
    func theDumpAgreesWithTheRuntimesReflectionLibraryOnEveryTaskTenRuns() throws {
        var agreed = 0
        var totals = (tasks: 0, chains: 0, fields: 0, actors: 0)
        for run in 1...10 {
            let host = try TaskHost(["--orders", "1000", "--sleepers", "10"], name: "oracle-\(run)")
            let report = try host.tasks()
            let dump = try #require(report.tasks)
            #expect(dump.tasks.count == 1031, "run \(run): \(dump.tasks.count) tasks")
            var error = [CChar](repeating: 0, count: 256)
            try #require(rm_open(Self.mirror, host.pid, &error, 256) == 0, "\(String(cString: error))")
            let disagreements = Self.compare(report, dump, totals: &totals)
            #expect(disagreements.isEmpty, "run \(run): \(disagreements.prefix(20))")
            if disagreements.isEmpty { agreed += 1 }
        }
        #expect(agreed == 10)
        #expect(rm_symbols_missed() == 0, "the mirror asked for symbols it did not get")
        print("oracle: \(agreed) of 10 runs agree; \(totals.tasks) tasks, \(totals.fields) fields, \(totals.chains) chains, \(totals.actors) actors compared")
    }

    static func compare(_ report: HangReport, _ dump: HangReport.TaskDump, totals: inout (tasks: Int, chains: Int, fields: Int, actors: Int)) -> [String] {
        var disagreements: [String] = []
        let byAddress = Dictionary(dump.tasks.compactMap { task in HexText.parse(task.address).map { ($0, task) } }, uniquingKeysWith: { a, _ in a })
        let idByAddress = byAddress.mapValues(\.id)
        func address(_ frame: Int) -> UInt64? {
            report.frames.indices.contains(frame) ? HexText.parse(report.frames[frame].address) : nil
        }
        for (taskAddress, task) in byAddress {
            var info = rm_task_info()
            guard rm_task_info_read(taskAddress, &info) == 1 else {
                disagreements.append("task \(task.id): the mirror says \(String(cString: info.Error))")
                continue
            }
            func check<T: Equatable>(_ field: String, _ ours: T, _ theirs: T) {
                totals.fields += 1
                if ours != theirs { disagreements.append("task \(task.id) \(field): ours \(ours), the mirror's \(theirs)") }
            }
            let traits = task.traits ?? []
            check("id", task.id, info.Id)
            check("kind", 0, info.Kind)
            check("child", traits.contains("child") || traits.contains("group child") || traits.contains("async let"), info.IsChildTask)
            check("group child", traits.contains("group child"), info.IsGroupChildTask)
            check("async let", traits.contains("async let"), info.IsAsyncLetTask)
            check("cancelled", traits.contains("cancelled"), info.IsCancelled)
            check("running", task.state == "running", info.HasIsRunning && info.IsRunning)
            check("enqueued", task.state == "enqueued", info.IsEnqueued)
            check("resume function", task.entry.flatMap(address) ?? 0, info.RunJob)
            let frames = (0..<Int(info.AsyncBacktraceFramesCount)).map { info.AsyncBacktraceFrames[$0] }
            check("chain", task.chain.compactMap(address), frames)
            if task.state != "running" { totals.chains += 1 }
            check("chain complete", task.chainEnd == "complete" || task.state == "running", true)
            let theirs = (0..<Int(info.ChildTaskCount)).compactMap { idByAddress[info.ChildTasks[$0]] }
            check("children listed", Int(info.ChildTaskCount), theirs.count)
            let ours = task.children ?? []
            if info.IsChildTask {
                check("children", Set(ours), Set(theirs))
            } else {
                // Quirk 1: a top-level task's records each give their first child only.
                check("children (first of each record)", Set(theirs).isSubset(of: Set(ours)) && (ours.isEmpty == theirs.isEmpty), true)
            }
            totals.tasks += 1
        }
        for actor in dump.actors {
            guard let actorAddress = HexText.parse(actor.address) else { continue }
            var info = rm_actor_info()
            guard rm_actor_info_read(actorAddress, &info) == 1 else {
                disagreements.append("actor \(actor.address): the mirror says \(String(cString: info.Error))")
                continue
            }
            let states = ["idle", "scheduled", "running", "zombie", "zombie"]
            if Int(info.State) >= states.count || states[Int(info.State)] != actor.state {
                disagreements.append("actor \(actor.address) state: ours \(actor.state), the mirror's \(info.State)")
            }
            if Int(info.MaxPriority) != actor.priority { disagreements.append("actor \(actor.address) priority: ours \(actor.priority), the mirror's \(info.MaxPriority)") }
            var queue: [UInt64] = []
            var job = info.FirstJob
            while job != 0, queue.count < 100_000 {
                queue.append(idByAddress[job] ?? 0)
                job = rm_next_job(job)
            }
            if queue != actor.queue { disagreements.append("actor \(actor.address) queue: ours \(actor.queue), the mirror's \(queue)") }
            totals.actors += 1
        }
        return disagreements
    }
}
