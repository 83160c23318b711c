import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The libdispatch workers that may drain a watched queue, each with where it keeps its current
/// queue (libdispatch's thread-local `dispatch_queue_key` word): the queue is busy exactly when one
/// of them has it as its current queue.
///
/// A worker that runs a ping finds its own word (`UnsafeCurrentQueueSlot`). Once one has, the
/// word's place relative to a thread pointer is known, and the process's other workers are found
/// too, without stopping or signalling any: by their glibc thread descriptors at the top of their
/// stack mappings (`UnsafeThreadDescriptor`), again whenever the threads of the process change (at
/// most once per `discoveryIntervalNanoseconds`) and whenever the queue seems busy on none of
/// them. So libdispatch may hand the queue to any worker, old or new: it is looked at, dated and
/// captured like one that ran a ping.
final class QueueWorkers: Sendable {
    /// A worker, the address of its current-queue word, and its thread pointer (its glibc
    /// descriptor: where its other thread-local words are found from, 0 where not known).
    struct Slot: Equatable, Sendable {
        let tid: Int32
        let slot: UInt
        var pointer: UInt = 0
    }

    /// Where the queue's work runs now, as the workers' words say.
    enum Draining: Equatable {
        /// On this one of them.
        case thread(Int32)
        /// On none of them (every word was read).
        case elsewhere
        /// Not known (no word located, a word unreadable, or several holding the queue).
        case unknown
    }

    /// Workers kept at most (the oldest found go first).
    static let capacity = 64
    static let discoveryIntervalNanoseconds: UInt64 = 1_000_000_000

    private let slots = Mutex<[Slot]>([])
    /// The queue as the words hold it (0: not learnt yet).
    private let queueIdentity = Atomic<UInt>(0)
    /// The current-queue word's place from a worker's thread pointer (x86_64's static TLS lies below
    /// it: a wrapping offset; 0: not learnt yet).
    private let wordOffset = Atomic<UInt>(0)
    /// When to look for workers next, and the threads the last search saw (the watchdog's thread).
    private struct Discovery: @unchecked Sendable {
        var next: UInt64 = 0
        var threads: [Int32] = []
        let list = ProcessThreadList()
    }
    private let discovery = Mutex(Discovery())

    var all: [Slot] { slots.withLock { $0 } }
    var queue: UInt? {
        let queue = queueIdentity.load(ordering: .relaxed)
        return queue == 0 ? nil : queue
    }
    /// Whether workers can be found by their descriptors (a ping taught where the word lies).
    var findsWorkers: Bool { wordOffset.load(ordering: .relaxed) != 0 }

    /// On a thread that runs a ping: where that thread keeps its current queue, learnt once per
    /// thread (a new thread that reuses an old one's memory replaces its entry); `firstSeen` when
    /// it was not known before.
    func noteCurrentThread(tid: Int32) -> (slot: UInt, firstSeen: Bool)? {
        if let known = slots.withLock({ $0.first { $0.tid == tid } }) { return (known.slot, false) }
        guard let located = UnsafeCurrentQueueSlot.locateOnCurrentThread() else { return nil }
        queueIdentity.store(located.queue, ordering: .relaxed)
        learnWordOffset(slot: located.slot)
        add([Slot(tid: tid, slot: located.slot, pointer: UInt(pthread_self()))])
        return (located.slot, true)
    }

    /// Its current-queue word as an offset from its thread pointer, and where its descriptor is in
    /// its stack's mapping, once.
    private func learnWordOffset(slot: UInt) {
        let pointer = UInt(pthread_self())
        guard wordOffset.load(ordering: .relaxed) == 0, slot != pointer, UnsafeThreadDescriptor.learnOnCurrentThread() else { return }
        wordOffset.store(slot &- pointer, ordering: .relaxed)
    }

    private func add(_ found: [Slot]) {
        slots.withLock { slots in
            for slot in found {
                slots.removeAll { $0.tid == slot.tid || $0.slot == slot.slot }
                slots.append(slot)
            }
            if slots.count > Self.capacity { slots.removeFirst(slots.count - Self.capacity) }
        }
    }

    /// On the watchdog's thread, at a look: finds the process's workers by their descriptors when
    /// its threads changed since the last search (at most once an interval), or at once when
    /// `now` (coarse ns) the queue seems busy on none of the workers known (`force`).
    /// True when it found a worker not known before.
    @discardableResult
    func discover(at now: UInt64, force: Bool) -> Bool {
        guard findsWorkers else { return false }
        let live = discovery.withLock { discovery -> [Int32]? in
            guard force || now >= discovery.next else { return nil }
            discovery.next = now &+ Self.discoveryIntervalNanoseconds
            let threads = discovery.list.threadIDs()
            defer { discovery.threads = threads }
            return force || threads != discovery.threads ? threads : nil
        }
        guard let live else { return false }
        let alive = Set(live)
        slots.withLock { $0.removeAll { !alive.contains($0.tid) } }
        let offset = wordOffset.load(ordering: .relaxed)
        let known = Set(all.map(\.tid))
        var found: [Slot] = []
        for mapping in StackMapping.readAll() {
            guard let thread = UnsafeThreadDescriptor.thread(mappingEnd: mapping.end), !known.contains(thread.tid),
                Self.isWorker(named: ProcTask(tid: thread.tid).name())
            else { continue }
            found.append(Slot(tid: thread.tid, slot: thread.pointer &+ offset, pointer: thread.pointer))
        }
        if !found.isEmpty { add(found) }
        return !found.isEmpty
    }

    /// A libdispatch worker names itself after the last 15 bytes of its root queue's label
    /// (`com.apple.root.default-qos.overcommit` is `-qos.overcommit`, the pool's `oot.default-qos`).
    static func isWorker(named name: String?) -> Bool {
        guard let name else { return false }
        return name.hasSuffix("qos.overcommit") || name.hasSuffix("-qos")
    }

    /// The thread pointer of worker `tid`, when it is one and its pointer is known.
    func threadPointer(tid: Int32) -> UInt? {
        slots.withLock { $0.first { $0.tid == tid } }.flatMap { $0.pointer == 0 ? nil : $0.pointer }
    }

    func draining() -> Draining {
        guard let queue else { return .unknown }
        let slots = all
        guard !slots.isEmpty else { return .unknown }
        var draining: [Int32] = []
        for entry in slots {
            // A worker gone since it was found reads nothing: not the queue's.
            guard let word = UnsafeCurrentQueueSlot.queue(slot: entry.slot) else {
                if access("/proc/self/task/\(entry.tid)", F_OK) == 0 { return .unknown }
                continue
            }
            // A stack block glibc gave a new thread after the worker exited holds the new one's word.
            if word == queue {
                guard UnsafeThreadDescriptor.tid(ofPointer: entry.slot &- wordOffset.load(ordering: .relaxed)) == entry.tid else {
                    return .unknown
                }
                draining.append(entry.tid)
            }
        }
        switch draining.count {
        case 0: return .elsewhere
        case 1: return .thread(draining[0])
        default: return .unknown
        }
    }
}
