/// Reads a default actor a task waits for (`DefaultActorImpl` on the verified layout): its class's
/// metadata, its state and max priority, and the jobs queued on it (each job's next is its
/// SchedulerPrivate[0], low 2 bits flags), through the kernel. The queue is read only while the
/// actor is not idle (its first-job word is stale otherwise). Unsafe: raw addresses.
struct UnsafeActorReader {
    let layout: TaskLayout
    /// The most jobs read from one queue.
    var queueLimit = 100_000

    func read(_ address: UInt) -> ActorSnapshot? {
        guard address != 0, address & 7 == 0, let metadata = UnsafeProcessMemory.copy(UInt.self, at: address),
            let flagsWord = UnsafeProcessMemory.copy(UInt.self, at: address + UInt(layout.actorFlags)),
            let first = UnsafeProcessMemory.copy(UInt.self, at: address + UInt(layout.actorFirstJob))
        else { return nil }
        var actor = ActorSnapshot(address: address, metadata: metadata, flags: UInt32(truncatingIfNeeded: flagsWord), queue: [], queueEnd: nil)
        guard actor.flags & 7 != 0 else { return actor }
        var job = first & ~3
        var seen = Set<UInt>()
        while job != 0 {
            guard actor.queue.count < queueLimit else {
                actor.queueEnd = "limit"
                break
            }
            guard job & 7 == 0, seen.insert(job).inserted else {
                actor.queueEnd = "invalid"
                break
            }
            actor.queue.append(job)
            guard let next = UnsafeProcessMemory.copy(UInt.self, at: job + UInt(layout.jobNext)) else {
                actor.queueEnd = "unreadable"
                break
            }
            job = next & ~3
        }
        return actor
    }
}
