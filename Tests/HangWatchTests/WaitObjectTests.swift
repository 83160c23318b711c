import Foundation
@testable import HangWatch
import Testing

/// What a blocked thread waits on, from its system call and the C library function on its stack;
/// who holds it, from the lock's words; the chain of holders and its cycle. All pure.
@Suite struct WaitObjectTests {
    static let address: UInt = 0x7f00_1000

    @Test(arguments: [
        // (syscall, arguments, function on the stack) → kind
        (Syscalls.futex, [address, 128, 2], WaitFunction.mutexLock, "mutex"),
        (Syscalls.futex, [address, 0, 2], nil, "futex"),
        (Syscalls.futex, [address, 6 | 128, 0], nil, "swift-mutex"),
        (Syscalls.futex, [address, 13, 0], WaitFunction.mutexLock, "swift-mutex"),
        (Syscalls.futex, [address, 9 | 128, 0], WaitFunction.rwlockLock, "rwlock"),
        (Syscalls.futex, [address, 9 | 128, 0], WaitFunction.conditionWait, "condition"),
        (Syscalls.futex, [address, 11 | 128, 0], nil, "condition"),
        // A condition wait taking its mutex again once woken (glibc's lock wait: FUTEX_WAIT for 2).
        (Syscalls.futex, [address, 0 | 128, 2], WaitFunction.conditionWait, "mutex"),
        (Syscalls.futex, [address, 0, 7], WaitFunction.join, "thread-join"),
        (Syscalls.futex, [address, 9 | 128 | 256, 0], WaitFunction.semaphoreWait, "semaphore"),
        (Syscalls.futex, [address, 0, 0], WaitFunction.dispatchWait, "dispatch"),
        (Syscalls.futex, [address, 0, 0], WaitFunction.barrierWait, "barrier"),
        (Syscalls.wait4, [4242, 0, 0], nil, "child-process"),
        (Syscalls.waitid, [1, 4242, 0], nil, "child-process"),
        (Syscalls.flock, [5, 2], nil, "file-lock"),
        (Syscalls.fcntl, [5, 7, 0], nil, "file-lock"),
    ] as [(Int, [UInt], WaitFunction?, String)])
    func aWaitIsNamedByItsCallAndTheFunctionItIsIn(_ number: Int, _ arguments: [UInt], _ function: WaitFunction?, _ kind: String) {
        #expect(WaitObject.classify(syscall: number, arguments: arguments, function: function)?.kind == kind)
    }

    @Test func callsThatWaitOnNoObjectAreNotWaits() {
        #expect(WaitObject.classify(syscall: Syscalls.futex, arguments: [Self.address, 1, 1], function: nil) == nil)  // FUTEX_WAKE
        #expect(WaitObject.classify(syscall: Syscalls.futex, arguments: [0, 0, 0], function: .mutexLock) == nil)
        #expect(WaitObject.classify(syscall: Syscalls.fcntl, arguments: [5, 6, 0], function: nil) == nil)  // F_SETLK: no wait
        #expect(WaitObject.classify(syscall: 230, arguments: [1, 0, 0], function: nil) == nil)  // clock_nanosleep
        #expect(WaitObject.classify(syscall: Syscalls.wait4, arguments: [], function: nil) == nil)
    }

    @Test func anyChildOrAProcessGroupIsAChildWait() {
        #expect(WaitObject.classify(syscall: Syscalls.wait4, arguments: [UInt(bitPattern: -1)], function: nil) == .childProcess(pid: -1))
        #expect(WaitObject.classify(syscall: Syscalls.waitid, arguments: [0, 0], function: nil) == .childProcess(pid: -1))
        #expect(WaitObject.classify(syscall: Syscalls.waitid, arguments: [2, 77], function: nil) == .childProcess(pid: -77))
    }

    @Test func theInnermostWaitingFunctionOnTheStackCounts() {
        let known: [UInt: WaitFunction] = [0x100: .mutexLock, 0x200: .conditionWait]
        // A condition wait re-locks its mutex on the way out: the mutex is the innermost.
        #expect(WaitFunction.innermost(in: [nil, 0x100, 0x200], known: known) == .mutexLock)
        #expect(WaitFunction.innermost(in: [0x900, nil, 0x200], known: known) == .conditionWait)
        #expect(WaitFunction.innermost(in: [0x900, nil], known: known) == nil)
    }

    // MARK: Owners

    @Test func aMutexOwnerIsItsOwnerFieldWhenThatIsAThreadHere() {
        let threads: Set<Int32> = [10, 11]
        let isThread = { threads.contains($0) }
        #expect(LockOwners.mutex(lock: 2, owner: 11, isThread: isThread) == .thread(11))
        #expect(LockOwners.mutex(lock: 0, owner: 11, isThread: isThread) == .free)
        if case .unknown = LockOwners.mutex(lock: 2, owner: 0, isThread: isThread) {} else { Issue.record("no owner field: unknown") }
        if case .unknown = LockOwners.mutex(lock: 2, owner: 99, isThread: isThread) {} else { Issue.record("no such thread: unknown, never named") }
    }

    @Test func aPriorityInheritanceWordHoldsItsOwner() {
        let isThread = { (tid: Int32) in tid == 1234 }
        #expect(LockOwners.priorityInheritance(word: 1234 | 0x8000_0000, isThread: isThread) == .thread(1234))  // FUTEX_WAITERS
        #expect(LockOwners.priorityInheritance(word: 0, isThread: isThread) == .free)
        if case .unknown = LockOwners.priorityInheritance(word: 4321, isThread: isThread) {} else { Issue.record("not a thread here") }
    }

    @Test func aJoinWaitsForTheThreadItsWordNames() {
        #expect(LockOwners.join(word: 77, isThread: { $0 == 77 }) == .thread(77))
        #expect(LockOwners.join(word: 0, isThread: { _ in true }) == .free)
    }

    /// The futex word a read-write lock is waited on can be any of three: exactly one reading of
    /// the writer field must name a thread.
    @Test func aReadWriteLocksWriterIsFoundWhicheverWordIsWaitedOn() {
        let base: UInt = 0x5000
        let memory: [UInt: Int32] = [base + 24: 55]
        for word in LockOwners.rwlockFutexOffsets {
            #expect(LockOwners.rwlock(futex: base + word, writerAt: { memory[$0] }, isThread: { $0 == 55 }) == .thread(55), "word \(word)")
        }
        if case .unknown = LockOwners.rwlock(futex: base + 8, writerAt: { _ in 0 }, isThread: { _ in true }) {} else {
            Issue.record("read-locked: no writer to name")
        }
    }

    @Test func fileLocksAreReadFromProcLocks() {
        let text = """
            1: FLOCK  ADVISORY  WRITE 16173 fe:00:16226067 0 EOF
            1: -> FLOCK  ADVISORY  WRITE 16156 fe:00:16226067 0 EOF
            2: POSIX  ADVISORY  WRITE 8191 fe:00:5605680 1073741824 1073742335
            garbage
            """
        let locks = LockOwners.parseLocks(text)
        #expect(locks.count == 3)
        #expect(LockOwners.fileLockHolders(locks, file: "fe:00:16226067") == [16173])
        #expect(LockOwners.fileLockHolders(locks, file: "fe:00:1") == [])
        #expect(LockOwners.fileIdentity(device: 0xfe00, inode: 16_226_067) == "fe:00:16226067")
        #expect(LockOwners.fileIdentity(device: 0x0801, inode: 5) == "08:01:5")
    }

    // MARK: Chains

    static func link(_ tid: Int32, heldBy owner: WaitOwner) -> WaitLink {
        WaitLink(tid: tid, name: "t\(tid)", object: .mutex(address: UInt(tid) * 16), file: nil, owner: owner, holder: nil)
    }

    @Test func aChainIsFollowedUntilAHolderWaitsOnNothing() {
        let waits: [Int32: WaitLink] = [2: Self.link(2, heldBy: .thread(3)), 3: Self.link(3, heldBy: .process(900))]
        let followed = WaitChain.follow(waiter: 1, holder: 2) { waits[$0] }
        #expect(followed.links.map(\.tid) == [2, 3])
        #expect(followed.cycle == nil)
    }

    @Test func aChainBackToAThreadInItIsADeadlock() {
        let waits: [Int32: WaitLink] = [2: Self.link(2, heldBy: .thread(3)), 3: Self.link(3, heldBy: .thread(1))]
        #expect(WaitChain.follow(waiter: 1, holder: 2) { waits[$0] }.cycle == [1, 2, 3])
        // A cycle that does not include the waiter: it waits behind a deadlock of others.
        let others: [Int32: WaitLink] = [2: Self.link(2, heldBy: .thread(3)), 3: Self.link(3, heldBy: .thread(2))]
        #expect(WaitChain.follow(waiter: 1, holder: 2) { others[$0] }.cycle == [2, 3])
        // A thread waiting for a lock it holds itself.
        #expect(WaitChain.follow(waiter: 1, holder: 1) { _ in nil }.cycle == [1])
    }

    static func read(_ tid: Int32, heldBy owner: WaitOwner, call: UInt = 202) -> WaitChain.Read {
        WaitChain.Read(tid: tid, call: [call, UInt(tid) * 16, 128, 2], object: .mutex(address: UInt(tid) * 16), owner: owner)
    }

    /// A deadlock is written only when a second read of every link finds the same calls and the
    /// same holders: a lock handed over between the first walk's reads closes no cycle.
    @Test func aCycleIsProvenOnlyByASecondReadOfEveryLink() {
        let first = [Self.read(1, heldBy: .thread(2)), Self.read(2, heldBy: .thread(1))]
        // Nothing moved: proven.
        #expect(WaitChain.confirms(first) { $0 })
        // Thread 1's lock was handed over to thread 3 meanwhile: the cycle never existed as one.
        #expect(!WaitChain.confirms(first) { $0.tid == 1 ? Self.read(1, heldBy: .thread(3)) : $0 })
        // Thread 2 left its call and entered another lock wait (the same kind, another call).
        #expect(!WaitChain.confirms(first) { $0.tid == 2 ? Self.read(2, heldBy: .thread(1), call: 98) : $0 })
        // Free at the second read, or the thread could not be read again.
        #expect(!WaitChain.confirms(first) { $0.tid == 2 ? Self.read(2, heldBy: .free) : $0 })
        #expect(!WaitChain.confirms(first) { $0.tid == 2 ? nil : $0 })
        // A link whose call was never known cannot be proven; nor can an empty cycle.
        #expect(!WaitChain.confirms([first[0], WaitChain.Read(tid: 2, call: nil, object: .mutex(address: 32), owner: .thread(1))]) { $0 })
        #expect(!WaitChain.confirms([]) { $0 })
    }

    @Test func aLongChainStopsAtItsBound() {
        let followed = WaitChain.follow(waiter: 1, holder: 2) { tid in Self.link(tid, heldBy: .thread(tid + 1)) }
        #expect(followed.links.count == WaitChain.maxLinks)
        #expect(followed.cycle == nil)
    }

    // MARK: Over a hang

    static func look(_ owner: WaitOwner, at microseconds: UInt64) -> WaitObservation {
        WaitObservation(microseconds: microseconds, object: .mutex(address: 0x40), syscall: Syscalls.futex, file: nil, owner: owner)
    }

    /// A holder that changes is recorded as such; the last look that found one is what the report
    /// says, not a look as it let go.
    @Test func holdersAreRecordedInTurnAndAFreeLookAtTheEndDoesNotHideThem() {
        var record = WaitRecord(latest: Self.look(.thread(5), at: 100))
        for (owner, time) in [(WaitOwner.thread(5), 100), (.thread(5), 150), (.thread(6), 200), (.thread(6), 250), (.free, 300)] as [(WaitOwner, UInt64)] {
            record.add(Self.look(owner, at: time))
        }
        #expect(record.latest.owner == .thread(6))
        #expect(record.spans.map(\.owner) == [.thread(5), .thread(6)])
        #expect(record.spans.map(\.firstMicroseconds) == [100, 200] && record.spans.map(\.lastMicroseconds) == [150, 250])
    }

    /// A holder woken as the hang ends is on a CPU (or waits for one on a busy machine), and a look
    /// then gets no stack: the report keeps the stack of the last look that got one, while the
    /// holder's span still runs to the later look.
    @Test func aLookWithoutTheHoldersStackDoesNotHideTheStackAnEarlierLookTook() {
        func look(_ owner: WaitOwner, at microseconds: UInt64, stack: Bool) -> WaitObservation {
            var observation = Self.look(owner, at: microseconds)
            let sample = StackSample(microseconds: microseconds, frames: [0x10, 0x20], method: .syscall, truncated: false, state: "S", syscall: 230)
            observation.holder = HolderLook(
                owner: owner, state: stack ? "S" : "R", sample: stack ? sample : nil, stackError: stack ? nil : "on a CPU")
            return observation
        }
        var record = WaitRecord(latest: look(.thread(5), at: 100, stack: true))
        record.add(look(.thread(5), at: 150, stack: true))
        record.add(look(.thread(5), at: 200, stack: false))
        #expect(record.latest.microseconds == 150 && record.latest.holder?.sample != nil)
        #expect(record.spans.map(\.lastMicroseconds) == [200])
        // Another holder's look replaces it, stack or not.
        record.add(look(.thread(6), at: 250, stack: false))
        #expect(record.latest.owner == .thread(6) && record.latest.holder?.sample == nil)
        // Counted: the looks at that holder, and those without its stack.
        #expect(record.holderLooks == 1 && record.holderLooksWithoutStack == 1)
    }

    /// A holder caught as it lets go, in the dynamic linker's lazy binding of a first call (seen
    /// beside a busy CPU: the stack ended at `_dl_runtime_resolve_xsavec`, the walk stopped there):
    /// that look's stack does not replace the whole one an earlier look walked; a later whole one does.
    @Test func aLookWhoseWalkOfTheSameHolderStoppedEarlyKeepsTheWholeStackBefore() {
        func look(_ owner: WaitOwner, at microseconds: UInt64, stoppedEarly: Bool) -> WaitObservation {
            var observation = Self.look(owner, at: microseconds)
            var sample = StackSample(
                microseconds: microseconds, frames: stoppedEarly ? [0x70, 0x80] : [0x10, 0x20, 0x30], method: .signal,
                truncated: stoppedEarly, state: "R")
            if stoppedEarly { sample.truncation = .unwindFailed }
            observation.holder = HolderLook(owner: owner, state: "R", sample: sample)
            return observation
        }
        var record = WaitRecord(latest: look(.thread(5), at: 100, stoppedEarly: false))
        record.add(look(.thread(5), at: 150, stoppedEarly: true))
        #expect(record.latest.microseconds == 100 && record.latest.holder?.sample?.frames == [0x10, 0x20, 0x30])
        #expect(record.spans.map(\.lastMicroseconds) == [150])
        record.add(look(.thread(5), at: 200, stoppedEarly: false))
        #expect(record.latest.microseconds == 200)
        // Another holder's look replaces it, whole or not; a stopped walk is kept when it is all there is.
        record.add(look(.thread(6), at: 250, stoppedEarly: true))
        #expect(record.latest.owner == .thread(6) && record.latest.holder?.sample?.truncated == true)
    }

    /// A child being waited for exits and is reaped as the wait ends: a last look that still saw
    /// the wait but could no longer read the child's name does not hide the name the looks before
    /// it read (seen in `WaitsForTests`: the report's holder without a name, 1 run in several).
    @Test func aLookThatCouldNotReadTheSameHoldersNameKeepsTheNameBefore() {
        func look(at microseconds: UInt64, name: String?) -> WaitObservation {
            var observation = WaitObservation(
                microseconds: microseconds, object: .childProcess(pid: 77), syscall: Syscalls.wait4, file: nil, owner: .process(77))
            observation.holder = HolderLook(owner: .process(77), name: name, state: name == nil ? nil : "S", stackError: "another process")
            return observation
        }
        var record = WaitRecord(latest: look(at: 100, name: "sleep"))
        record.add(look(at: 150, name: "sleep"))
        record.add(look(at: 200, name: nil))
        #expect(record.latest.holder?.name == "sleep" && record.latest.microseconds == 150)
        #expect(record.spans.map(\.lastMicroseconds) == [200])
    }

    /// The looks that found the hung thread's holder, counted for the report, with those that
    /// could not take its stack; a new holder starts the count again.
    @Test func theLooksAtTheHolderAndThoseWithoutItsStackAreCounted() {
        func look(_ owner: WaitOwner, at microseconds: UInt64, stack: Bool) -> WaitObservation {
            var observation = Self.look(owner, at: microseconds)
            let sample = StackSample(microseconds: microseconds, frames: [0x10], method: .signal, truncated: false, state: "R")
            observation.holder = HolderLook(owner: owner, state: "R", sample: stack ? sample : nil, stackError: stack ? nil : "timeout")
            return observation
        }
        var record = WaitRecord(latest: look(.thread(5), at: 100, stack: false))
        record.add(look(.thread(5), at: 100, stack: false))
        for at in [150, 200, 250] as [UInt64] { record.add(look(.thread(5), at: at, stack: true)) }
        #expect(record.holderLooks == 4 && record.holderLooksWithoutStack == 1)
        record.add(look(.thread(9), at: 300, stack: true))
        #expect(record.holderLooks == 1 && record.holderLooksWithoutStack == 0)
    }

    /// A look as the lock is released names no holder (being released, or free): the look that
    /// found the holder stays what the report says; a poll whose other end's process exited as the
    /// hang ended likewise keeps the look that named it.
    @Test func aLookAsTheHoldersLetGoDoesNotHideThem() {
        var record = WaitRecord(latest: Self.look(.thread(5), at: 100))
        record.add(Self.look(.thread(5), at: 100))
        record.add(Self.look(.unknown("no writer holds the lock: it is read-locked (readers are not recorded) or being released"), at: 150))
        #expect(record.latest.owner == .thread(5))
        var poll = WaitObservation(
            microseconds: 100, object: .io(.pollArray(address: 0x10, count: 2)), syscall: 7, file: nil, owner: .unknown("a wait on 2 descriptors"))
        var pipe = EndpointLook(descriptor: 3, type: "pipe")
        pipe.peers = [.process(90)]
        var socket = EndpointLook(descriptor: 4, type: "tcp")
        socket.peers = [.process(90)]
        poll.endpoints = [pipe, socket]
        var ending = poll
        ending.microseconds = 150
        ending.endpoints[1].peers = []
        var polls = WaitRecord(latest: poll)
        polls.add(poll)
        polls.add(ending)
        #expect(polls.latest.microseconds == 100)
    }

    /// The thread of this process at a socket's other end leaves its call as the hang ends: the
    /// look that finds only this process holding that end does not replace the one with the thread.
    @Test func aLookAsTheThreadAtTheOtherEndLeftItsCallDoesNotHideIt() {
        var record = WaitRecord(latest: Self.look(.thread(5), at: 100), ownProcess: 77)
        record.add(Self.look(.thread(5), at: 100))
        record.add(Self.look(.process(77), at: 150))
        #expect(record.latest.owner == .thread(5))
        // Another process's end is news.
        record.add(Self.look(.process(78), at: 200))
        #expect(record.latest.owner == .process(78))
    }
}

/// Timed waits whose exported function only tail-calls the one that waits.
@Suite struct LibcTailJumpTests {
    /// glibc 2.36's `___pthread_mutex_timedlock64` at 0x8d210: `mov %rsi,%rdx; xor %esi,%esi;
    /// jmp __pthread_mutex_clocklock_common` (0x8c840), and `pthread_timedjoin_np`'s jump back.
    @Test func theTargetOfTheFirstJumpIsFound() {
        #expect(LibcWaitFunctions.tailJumpTarget(in: [0x48, 0x89, 0xf2, 0x31, 0xf6, 0xe9, 0x26, 0xf6, 0xff, 0xff], at: 0x8d210) == 0x8c840)
        #expect(
            LibcWaitFunctions.tailJumpTarget(
                in: [0x48, 0x89, 0xd1, 0x41, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x31, 0xd2, 0xe9, 0x90, 0xab, 0xff, 0xff], at: 0x90010) == 0x8abb0)
        #expect(LibcWaitFunctions.tailJumpTarget(in: [0x55, 0x48, 0x89, 0xe5, 0xc3], at: 0x1000) == nil)
        // A jump whose displacement would lie past the bytes read is not guessed at.
        #expect(LibcWaitFunctions.tailJumpTarget(in: [0x90, 0xe9, 0x00, 0x10], at: 0x1000) == nil)
    }

    /// In this process's C library: the timed and clock forms of a mutex lock jump to one
    /// function, which counts as a mutex lock.
    @Test func thisCLibrarysTimedMutexLockIsAMutexLock() throws {
        let timed = try #require(dlsym(nil, "pthread_mutex_timedlock").map { UInt(bitPattern: $0) })
        let clock = try #require(dlsym(nil, "pthread_mutex_clocklock").map { UInt(bitPattern: $0) })
        let target = try #require(LibcWaitFunctions.tailJumpTarget(of: timed), "glibc's timedlock no longer tail-calls: check the wait's stack")
        #expect(LibcWaitFunctions.tailJumpTarget(of: clock) == target)
        #expect(LibcWaitFunctions.byStart[target] == .mutexLock)
    }
}
