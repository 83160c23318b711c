#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension HangReport {
    /// What a blocked thread waited for, and who held it (schema 1.5): `waitsFor` of a report whose
    /// thread was blocked, and of each blocked thread of a `concurrency-pool` report.
    ///
    /// The object is named by what the thread's system call and the C library function on its
    /// stack prove: a mutex's futex word, a Swift `Mutex`'s priority-inheritance word, a
    /// read-write lock, a thread being joined, a child process, a file lock. Where the object has
    /// an owner the report names it (`holder`), with its own state and stack; where it has none by
    /// nature (a semaphore, a condition variable, a bare futex such as a `DispatchGroup`'s), it
    /// says so (`owner` `none`), never a guess.
    public struct WaitsFor: Codable, Sendable, Equatable {
        /// `mutex` (a `pthread_mutex_t`: `NSLock`, `NIOLock`, `pthread_mutex_lock`), `swift-mutex`
        /// (a priority-inheritance futex: Swift's `Synchronization.Mutex`, a `PTHREAD_PRIO_INHERIT`
        /// mutex), `rwlock`, `thread-join`, `child-process`, `file-lock`, `semaphore`,
        /// `condition`, `barrier`, `futex` (a futex no C library function on the stack explains).
        public var kind: String
        /// The object's address (the futex word's), when it has one.
        public var address: String?
        /// A file lock's file: `device:inode` as `/proc/locks` writes it (`08:01:1234`).
        public var file: String?
        /// The system call the wait is in (`futex`, `wait4`, `flock`, `fcntl`).
        public var syscall: String?
        /// `held` (the holder is known: `holder`), `none` (this kind of object has no owner),
        /// `unknown` (it has one, but it could not be read: see `reason`), `free` (no one held it
        /// at the look: the wait was about to end).
        public var owner: String
        /// Why the owner is `unknown` or `none`, in words.
        public var reason: String?
        /// Who held the object at the last look.
        public var holder: Holder?
        /// Every holder seen while the hang lasted, in order, when it changed: each with when it was
        /// first and last seen.
        public var holders: [HolderSpan]?
        /// Following the holder: what it waits for in turn, and who holds that, link by link (at
        /// most 8), the first link being this wait's holder.
        public var chain: [ChainLink]?
        /// The threads of a wait cycle, in order, when the chain comes back to a thread already in
        /// it: a deadlock, which `context.verdict` then says (`deadlocked`).
        public var deadlock: [Int32]?

        public init(
            kind: String, address: String? = nil, file: String? = nil, syscall: String? = nil, owner: String,
            reason: String? = nil, holder: Holder? = nil, holders: [HolderSpan]? = nil, chain: [ChainLink]? = nil,
            deadlock: [Int32]? = nil
        ) {
            self.kind = kind
            self.address = address
            self.file = file
            self.syscall = syscall
            self.owner = owner
            self.reason = reason
            self.holder = holder
            self.holders = holders
            self.chain = chain
            self.deadlock = deadlock
        }
    }

    /// Who held an object: a thread of this process (`tid`) or another process (`pid`).
    public struct Holder: Codable, Sendable, Equatable {
        /// A thread of the hung process.
        public var tid: Int32?
        /// Another process (a file lock's holder, a child being waited for).
        public var pid: Int32?
        /// Its name (`comm`).
        public var name: String?
        /// Scheduler state letter (`R`, `S`, `D`, ...).
        public var state: String?
        /// The system call it was blocked in, if any.
        public var syscall: String?
        /// `computing`, `blocked`, `unknown`, as for a thread of a report.
        public var verdict: String?
        /// Index into `stacks`: the holder's own stack, where it could be taken.
        public var stack: Int?
        /// Why there is no stack (`another process`, `thread not attached`: on a CPU, and not
        /// prepared for a capture signal, which is never sent where it could cut a sleep short).
        public var stackError: String?

        public init(
            tid: Int32? = nil, pid: Int32? = nil, name: String? = nil, state: String? = nil, syscall: String? = nil,
            verdict: String? = nil, stack: Int? = nil, stackError: String? = nil
        ) {
            self.tid = tid
            self.pid = pid
            self.name = name
            self.state = state
            self.syscall = syscall
            self.verdict = verdict
            self.stack = stack
            self.stackError = stackError
        }
    }

    /// One holder of an object, over the looks that saw it hold it.
    public struct HolderSpan: Codable, Sendable, Equatable {
        public var tid: Int32?
        public var pid: Int32?
        public var name: String?
        /// First and last look that saw it, milliseconds since `startedAt`.
        public var firstSeenMs: Double
        public var lastSeenMs: Double

        public init(tid: Int32?, pid: Int32?, name: String?, firstSeenMs: Double, lastSeenMs: Double) {
            self.tid = tid
            self.pid = pid
            self.name = name
            self.firstSeenMs = firstSeenMs
            self.lastSeenMs = lastSeenMs
        }
    }

    /// One link of a wait chain: a holder that waits in turn, what for, and who holds that.
    public struct ChainLink: Codable, Sendable, Equatable {
        /// The waiting thread (the previous link's holder).
        public var tid: Int32
        public var name: String?
        /// What it waits for (`kind`, `address`, as in `WaitsFor`).
        public var kind: String
        public var address: String?
        public var file: String?
        /// Its holder, when known (a thread or a process), with its stack.
        public var holder: Holder?

        public init(tid: Int32, name: String?, kind: String, address: String? = nil, file: String? = nil, holder: Holder? = nil) {
            self.tid = tid
            self.name = name
            self.kind = kind
            self.address = address
            self.file = file
            self.holder = holder
        }
    }
}
