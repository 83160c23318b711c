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
        /// An I/O wait's descriptors (additive within schema 1.5): the one a `read`, `write`, `connect`, `accept`
        /// or `fsync` is on, or the first 16 of a `poll`, `select` or `epoll_wait`, each named.
        public var endpoints: [Endpoint]?
        /// How many descriptors a multiplexed wait (`kind` `poll`) waits on in all.
        public var descriptors: Int?
        /// A sleep's time (`kind` `sleep`).
        public var sleep: Sleep?

        public init(
            kind: String, address: String? = nil, file: String? = nil, syscall: String? = nil, owner: String,
            reason: String? = nil, holder: Holder? = nil, holders: [HolderSpan]? = nil, chain: [ChainLink]? = nil,
            deadlock: [Int32]? = nil, endpoints: [Endpoint]? = nil, descriptors: Int? = nil, sleep: Sleep? = nil
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
            self.endpoints = endpoints
            self.descriptors = descriptors
            self.sleep = sleep
        }
    }

    /// One descriptor an I/O wait is on, named from `/proc` (and `sock_diag` for a UNIX socket's
    /// peer): what it is and, where it is on this host, who holds the other end.
    public struct Endpoint: Codable, Sendable, Equatable {
        public var descriptor: Int32
        /// `tcp`, `udp`, `unix`, `socket` (another family), `pipe`, `fifo`, `file`, `eventfd`,
        /// `epoll`, `timerfd`, `signalfd`, `other`.
        public var type: String
        /// What a multiplexed wait asks for on it: `in`, `out`, `in,out`.
        public var events: String?
        /// A socket's own address (`10.0.0.2:41234`, `[::1]:8080`, a UNIX socket's path or
        /// `@abstract` name).
        public var local: String?
        /// The address of the other end.
        public var remote: String?
        /// A TCP socket's state as `ss` names it (`ESTABLISHED`, `SYN-SENT`, `LISTEN`, ...), a UDP
        /// socket's `ESTABLISHED` or `UNCONN`.
        public var state: String?
        /// Bytes queued to read and to send (`SIOCINQ`, `SIOCOUTQ`).
        public var receiveQueue: Int?
        public var sendQueue: Int?
        /// A file's or FIFO's path (or what `/proc/self/fd` says of an anonymous one).
        public var path: String?
        /// A file's file system type (`ext4`, `nfs4`, `fuse.sshfs`, ...), its device (`major:minor`)
        /// and where it is mounted.
        public var filesystem: String?
        public var device: String?
        public var mountPoint: String?
        /// Who holds the other end: processes (`pid`), or the thread of this process in a call on
        /// it (`tid`, with its stack), each with its name, state and system call.
        public var peers: [Holder]?
        /// Why no one is named at the other end (`not on this host`, `a listening socket`, ...).
        public var peerNote: String?

        public init(descriptor: Int32, type: String) {
            self.descriptor = descriptor
            self.type = type
        }
    }

    /// The time a sleeping thread asked for.
    public struct Sleep: Codable, Sendable, Equatable {
        /// `monotonic`, `realtime`, `boottime`, ...
        public var clock: String
        /// Whether it sleeps until a time (`TIMER_ABSTIME`) rather than for a duration.
        public var absolute: Bool
        /// A relative sleep's duration, milliseconds.
        public var requestedMs: Double?
        /// Left at the last look, milliseconds: exact for an absolute time; for a relative one, at
        /// most this (counted from the first look that found the thread in this very call).
        public var leftMs: Double?

        public init(clock: String, absolute: Bool, requestedMs: Double? = nil, leftMs: Double? = nil) {
            self.clock = clock
            self.absolute = absolute
            self.requestedMs = requestedMs
            self.leftMs = leftMs
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
        /// Why there is no stack (`another process`; for a thread of this process, the reason the
        /// last look could not take it).
        public var stackError: String?
        /// The hung thread's holder (`waitsFor.holder`) only: the looks, one with each sample of the
        /// hang, that found this thread holding the object, and how many of them could not take its
        /// stack (it was waking, or a capture failed).
        public var looks: Int?
        public var looksWithoutStack: Int?

        public init(
            tid: Int32? = nil, pid: Int32? = nil, name: String? = nil, state: String? = nil, syscall: String? = nil,
            verdict: String? = nil, stack: Int? = nil, stackError: String? = nil, looks: Int? = nil, looksWithoutStack: Int? = nil
        ) {
            self.tid = tid
            self.pid = pid
            self.name = name
            self.state = state
            self.syscall = syscall
            self.verdict = verdict
            self.stack = stack
            self.stackError = stackError
            self.looks = looks
            self.looksWithoutStack = looksWithoutStack
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
