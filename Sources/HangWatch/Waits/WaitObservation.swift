/// Who held the object a thread waited on, as one look found it.
enum WaitOwner: Equatable, Sendable {
    /// A thread of this process.
    case thread(Int32)
    /// Another process (a file lock's holder, the child being waited for).
    case process(Int32)
    /// No one held it at the look: the wait was about to end.
    case free
    /// This kind of object has no owner (a semaphore, a condition variable): why, in words.
    case none(String)
    /// It has one, but it could not be read: why, in words.
    case unknown(String)

    /// The holding thread, if a thread of this process holds it.
    var thread: Int32? {
        if case .thread(let tid) = self { return tid }
        return nil
    }
}

/// A look at an object's holder: what it was doing, and its stack where it could be taken.
struct HolderLook: Equatable, Sendable {
    var owner: WaitOwner
    var name: String?
    /// Scheduler state letter (`R`, `S`, `D`, ...).
    var state: Character?
    /// The system call it was blocked in.
    var syscall: Int?
    /// Its stack: a blocked thread walked from `/proc`, as the hung thread's is; nil where none
    /// could be taken (`stackError`).
    var sample: StackSample?
    var stackError: String?
}

/// One link of a wait chain: a holder that itself waits, on what, and who holds that.
struct WaitLink: Equatable, Sendable {
    var tid: Int32
    var name: String?
    var object: WaitObject
    var file: String?
    var owner: WaitOwner
    var holder: HolderLook?
}

/// One look at what a blocked thread waited on: the object, its holder and the holder's stack,
/// the chain of waits behind it, and the cycle when the chain comes back (a deadlock).
struct WaitObservation: Equatable, Sendable {
    /// `CLOCK_MONOTONIC` at the look, microseconds.
    var microseconds: UInt64
    var object: WaitObject
    /// The system call the thread waited in.
    var syscall: Int
    /// A file lock's file, `major:minor:inode` as `/proc/locks` writes it.
    var file: String?
    var owner: WaitOwner
    var holder: HolderLook?
    /// The holder's own wait and so on, in order (the first link's `tid` is this wait's holder).
    var chain: [WaitLink] = []
    /// The threads of a cycle, starting with the waiter, when the chain came back to one of them.
    var cycle: [Int32]?
    /// An I/O wait's descriptors, named (at most `IOCall.maxDescriptors`), and how many a
    /// multiplexed wait had in all.
    var endpoints: [EndpointLook] = []
    var descriptorCount: Int?
    /// A sleep's time.
    var sleep: SleepLook?

    /// The report's kind: an I/O wait on one descriptor is named by what it is (`socket`, `pipe`,
    /// `fifo`, `file`, ...), the others by their object.
    var kind: String {
        guard case .io(.descriptor) = object, let endpoint = endpoints.first else { return object.kind }
        switch endpoint.type {
        case "tcp", "udp", "unix": return "socket"
        default: return endpoint.type
        }
    }
}

/// A sleep a thread is in: the time it asked for and what was left at the look.
struct SleepLook: Equatable, Sendable {
    /// `monotonic`, `realtime`, `boottime`, ... (`clock_nanosleep`'s clock; `nanosleep`'s is monotonic).
    var clock: String
    var absolute: Bool
    /// A relative sleep's duration; an absolute one's time left when first seen.
    var requestedMicroseconds: UInt64?
    /// Left at the look: exact for an absolute time; for a relative one, at most this (counted from
    /// the first look that found the thread in this very call).
    var leftMicroseconds: UInt64?
}

/// Looks at what a blocked thread waits on. The watchdog asks at each sample of a hang whose
/// thread was blocked; tests script it.
protocol WaitInspecting: Sendable {
    /// What thread `tid` waits on, its sample (blocked in a system call, with the call's arguments
    /// in `blockedKey`) in hand; nil when the call is no wait on an object (a sleep, a read).
    /// `signalAllowed`: a holder on a CPU may be captured by signal (behind the guard a capture
    /// uses, prepared first when it never was); false: never signalled (dumps, a debugger attached).
    func inspect(tid: Int32, sample: StackSample, signalAllowed: Bool) -> WaitObservation?
}

extension WaitInspecting {
    /// Never signalling a holder.
    func inspect(tid: Int32, sample: StackSample) -> WaitObservation? {
        inspect(tid: tid, sample: sample, signalAllowed: false)
    }
}

/// Following a wait's holder from thread to thread: a pure walk over a lookup, bounded.
enum WaitChain {
    /// One link of a cycle as a read found it: the thread, the call it was blocked in (its
    /// `blockedKey`: number, arguments, stack and program counters), the object and its holder.
    struct Read: Equatable {
        var tid: Int32
        var call: [UInt]?
        var object: WaitObject
        var owner: WaitOwner
    }

    /// Whether a cycle one walk found is proven: a second read of every link (`again`: the thread's
    /// call and the object's holder read anew; nil when unreadable) finds each thread still blocked
    /// in the very same call and each object held by the same thread. A lock handed over between
    /// the first walk's reads can close a cycle that never existed at any one instant; it cannot
    /// survive a second read of every link while the cycle's threads stay blocked, for none of them
    /// can release what it holds without leaving its call.
    static func confirms(_ first: [Read], again: (Read) -> Read?) -> Bool {
        guard !first.isEmpty else { return false }
        return first.allSatisfy { read in read.call != nil && again(read) == read }
    }

    /// The most links followed after the first holder.
    static let maxLinks = 8

    /// Follows the holders of `waiter`'s wait, starting with `holder`: each holder that waits in
    /// turn (`waitOf`, nil when it waits on nothing nameable) is a link, up to `maxLinks`. A holder
    /// already in the chain (the waiter included) closes a cycle: those threads, in order from
    /// the one the chain came back to.
    static func follow(waiter: Int32, holder: Int32, waitOf: (Int32) -> WaitLink?) -> (links: [WaitLink], cycle: [Int32]?) {
        var visited = [waiter]
        var links: [WaitLink] = []
        var current = holder
        while true {
            if let position = visited.firstIndex(of: current) {
                return (links, Array(visited[position...]))
            }
            visited.append(current)
            guard links.count < maxLinks, let link = waitOf(current) else { return (links, nil) }
            links.append(link)
            guard let next = link.owner.thread else { return (links, nil) }
            current = next
        }
    }
}
