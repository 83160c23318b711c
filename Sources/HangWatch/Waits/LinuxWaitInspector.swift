import Foundation
@_spi(Internal) import HangWatchReport
import Synchronization

/// Looks at what a blocked thread of this process waits on, and who holds it, from what Linux
/// shows without stopping anyone: the call's arguments in `/proc/self/task/<tid>/syscall`, the
/// lock's own words (read through the kernel, so a stale address fails instead of faulting),
/// `/proc/locks` for file locks, and the holder's own `/proc` files and stack.
///
/// A holder blocked in a call is walked from `/proc` without a signal, as the hung thread is; one
/// on a CPU is not signalled (it was not prepared for a capture, and a signal must never cut a
/// sleep short): its stack is marked as not taken. The holder's own wait is followed in turn
/// (`WaitChain`), so a cycle, a deadlock, is named at the first look, once a second read of every
/// link proves it (`WaitChain.confirms`).
///
/// Used by the watchdog's thread only (one lane at a time), while a hang is sampled: nothing here
/// runs when no hang is.
package final class LinuxWaitInspector: WaitInspecting, @unchecked Sendable {
    private let images: ImageRegistry?
    private let maxFrames: Int
    private let timeoutNanoseconds: Int64
    /// The signal a holder on a CPU is captured with (0: never signalled).
    private let captureSignal: Int32
    /// Whether the inspection under way may signal a holder (`inspect`'s `signalAllowed`); the
    /// watchdog's thread only.
    private var signalsHolders = false
    /// The holders' samplers (each keeps its thread's proc files open) and last samples, by tid:
    /// a holder still blocked in the same call is not walked again.
    private let holders = Mutex<[Int32: (sampler: LinuxStackSampler, thread: MonitoredThread, last: StackSample?)]>([:])
    /// Names an I/O wait's descriptors (its host-wide scans kept a second, each look's part bounded
    /// unless `scansWhole`).
    private let naming: DescriptorNaming
    /// When each thread was first found in the sleep it is in (its call's key).
    private let sleepsSeen = Mutex<[Int32: (key: [UInt], microseconds: UInt64)]>([:])

    /// `captureSignal`: a holder on a CPU is captured with it, when an inspection allows (0: never).
    /// `scansWhole`: each look reads every process's descriptors it needs at once (a dump, one look
    /// off the watchdog's thread), not a bounded part at a time (a hang's samples).
    /// How a holder's stack is taken.
    private let inspection: ThreadInspection

    init(
        inspection: ThreadInspection, images: ImageRegistry?, maxFrames: Int, timeoutNanoseconds: Int64, captureSignal: Int32 = 0,
        scansWhole: Bool = false
    ) {
        self.inspection = inspection
        self.naming = DescriptorNaming(now: { SystemMonotonicClock().microseconds() }, budgetMicroseconds: scansWhole ? nil : DescriptorNaming.lookBudgetMicroseconds)
        self.images = images
        self.maxFrames = maxFrames
        self.timeoutNanoseconds = timeoutNanoseconds
        self.captureSignal = captureSignal
    }

    func inspect(tid: Int32, sample: StackSample, signalAllowed: Bool) -> WaitObservation? {
        signalsHolders = signalAllowed && captureSignal != 0
        defer { signalsHolders = false }
        var observation: WaitObservation
        if let object = Self.object(of: sample, images: images?.current) {
            observation = WaitObservation(
                microseconds: sample.microseconds, object: object, syscall: sample.syscall ?? 0, file: nil, owner: .free)
            (observation.owner, observation.file) = owner(of: object)
            // Held by the waiter itself: a lock it takes again (a deadlock of its own) while it is
            // still in that call; else its wait ended as the object was read (it took the lock).
            if observation.owner.thread == tid, !stillInCall(tid, sample) { return nil }
        } else if let io = inspectIO(tid: tid, sample: sample) {
            observation = io
        } else {
            return nil
        }
        observation.holder = look(at: observation.owner)
        if let holder = observation.owner.thread {
            let followed = WaitChain.follow(waiter: tid, holder: holder) { tid in
                link(of: tid, already: tid == holder ? observation.holder?.sample : nil)
            }
            observation.chain = followed.links
            if let cycle = followed.cycle {
                let reads = [WaitChain.Read(tid: tid, call: sample.blockedKey, object: observation.object, owner: observation.owner)]
                    + followed.links.filter { cycle.contains($0.tid) }.map { link in
                        WaitChain.Read(tid: link.tid, call: holders.withLock { $0[link.tid]?.last?.blockedKey }, object: link.object, owner: link.owner)
                    }
                observation.cycle = WaitChain.confirms(reads, again: readAgain) ? cycle : nil
            }
        }
        forgetHoldersGone(keeping: Set([observation.owner.thread].compactMap { $0 } + observation.chain.compactMap(\.owner.thread)))
        return observation
    }

    /// Whether thread `tid` is still in the call `sample` found it blocked in.
    private func stillInCall(_ tid: Int32, _ sample: StackSample) -> Bool {
        guard case .inSyscall(let number, let arguments, let stackPointer, let programCounter)? = ProcTask(tid: tid).syscall() else {
            return false
        }
        return CapturePlan.BlockedCall(number: number, arguments: arguments, stackPointer: stackPointer, programCounter: programCounter).key
            == sample.blockedKey
    }

    /// A cycle's link read anew: the thread's call from its `syscall` file, the object's holder from
    /// the object (the object as first read: the same call waits on the same object).
    private func readAgain(_ read: WaitChain.Read) -> WaitChain.Read? {
        guard case .inSyscall(let number, let arguments, let stackPointer, let programCounter)? = ProcTask(tid: read.tid).syscall() else {
            return nil
        }
        let call = CapturePlan.BlockedCall(number: number, arguments: arguments, stackPointer: stackPointer, programCounter: programCounter)
        return WaitChain.Read(tid: read.tid, call: call.key, object: read.object, owner: owner(of: read.object).0)
    }

    /// What `sample`'s thread waits on: its call and the C library function its stack is in.
    static func object(of sample: StackSample, images: ImageMap?) -> WaitObject? {
        guard let number = sample.syscall, let key = sample.blockedKey, key.count >= 7 else { return nil }
        let arguments = Array(key[1...6])
        var function: WaitFunction?
        if number == Syscalls.futex, let images {
            let starts = sample.frames.enumerated().map { position, address in
                images.functionStart(of: position == 0 ? address : address &- 1)
            }
            function = WaitFunction.innermost(in: starts, known: LibcWaitFunctions.byStart)
            if function == nil, Self.firstImageOutsideTheCLibrary(sample.frames, images: images)?.hasPrefix("libdispatch") == true {
                function = .dispatchWait
            }
        }
        let object = WaitObject.classify(syscall: number, arguments: arguments, function: function)
        // `pthread_join` tail-calls the function that waits, so it is not on the stack: a futex word
        // that is the `tid` of a live thread's descriptor is a join of that thread.
        if case .futex(let address)? = object, UnsafeThreadDescriptor.isTIDWordOfALiveThread(address) {
            return .threadJoin(address: address)
        }
        return object
    }

    /// The file name of the image of the innermost frame that is not the C library's.
    static func firstImageOutsideTheCLibrary(_ frames: [UInt], images: ImageMap) -> String? {
        for address in frames {
            guard let index = images.imageIndex(containing: address) else { return nil }
            let name = StackSignature.baseName(images.images[index].path)
            if !(name.hasPrefix("libc.so") || name.hasPrefix("libc-") || name.hasPrefix("libpthread")) { return name }
        }
        return nil
    }

    /// Who holds `object`, read from the object, and a file lock's file.
    private func owner(of object: WaitObject) -> (WaitOwner, String?) {
        let isThread = { (tid: Int32) in tid > 0 && access("/proc/self/task/\(tid)", F_OK) == 0 }
        func word<T>(_ type: T.Type, _ address: UInt) -> T? { UnsafeProcessMemory.copy(type, at: address) }
        switch object {
        case .mutex(let address):
            guard let lock = word(UInt32.self, address), let owner = word(Int32.self, address + LockOwners.mutexOwnerOffset) else {
                return (.unknown("the mutex could not be read"), nil)
            }
            return (LockOwners.mutex(lock: lock, owner: owner, isThread: isThread), nil)
        case .priorityInheritanceMutex(let address):
            guard let value = word(UInt32.self, address) else { return (.unknown("the lock word could not be read"), nil) }
            return (LockOwners.priorityInheritance(word: value, isThread: isThread), nil)
        case .rwlock(let futex):
            return (LockOwners.rwlock(futex: futex, writerAt: { word(Int32.self, $0) }, isThread: isThread), nil)
        case .threadJoin(let address):
            guard let value = word(Int32.self, address) else { return (.unknown("the joined thread's word could not be read"), nil) }
            return (LockOwners.join(word: value, isThread: isThread), nil)
        case .childProcess(let pid):
            return (Self.child(pid), nil)
        case .fileLock(let descriptor):
            return Self.fileLockOwner(descriptor)
        case .semaphore, .condition, .barrier, .dispatch:
            return (.none(object.noOwnerReason ?? "no owner"), nil)
        case .futex:
            // A bare futex may be a lock whose owner nothing records: not ownerless, unknown.
            return (.unknown(object.noOwnerReason ?? "no owner is recorded"), nil)
        case .io:
            // Read anew for a cycle's proof only: a wait on I/O never closes a proven cycle.
            return (.unknown("an I/O wait is not read again"), nil)
        }
    }

    // MARK: I/O

    /// An I/O wait or a sleep: its descriptors named, the other end's holder where exactly one
    /// process (or thread of this one) holds it.
    private func inspectIO(tid: Int32, sample: StackSample) -> WaitObservation? {
        guard let number = sample.syscall, let key = sample.blockedKey, key.count >= 7,
            let call = IOCall.classify(syscall: number, arguments: Array(key[1...6]))
        else { return nil }
        var observation = WaitObservation(microseconds: sample.microseconds, object: .io(call), syscall: number, file: nil, owner: .free)
        var described: [(Int32, String?)] = []
        var direction: IOCall.IODirection?
        var connectingTo: SocketDiagnostics.InetAddress?
        switch call {
        case .descriptor(let descriptor, let way):
            described = [(descriptor, nil)]
            direction = way
            // A connect in progress: the address it was given (its second and third arguments).
            if way == .connect, let bytes = UnsafeProcessMemory.bytes(at: key[2], count: Int(min(key[3], 128))) {
                connectingTo = bytes.withUnsafeBytes { DescriptorNaming.inetAddress(sockaddr: $0) }
            }
        case .pollArray(let address, let count):
            let entries = UnsafeProcessMemory.copyArray(pollfd.self, at: address, count: min(count, 256)) ?? []
            let all = IOCall.pollDescriptors(entries.map { ($0.fd, $0.events) })
            observation.descriptorCount = count <= 256 ? all.count : count
            described = all.map { ($0.0, $0.1) }
        case .select(let count, let read, let write, _):
            let words = (count + 63) / 64
            let reads = read == 0 ? [] : IOCall.selectDescriptors(UnsafeProcessMemory.copyArray(UInt64.self, at: read, count: words) ?? [], count: count)
            let writes = write == 0 ? [] : IOCall.selectDescriptors(UnsafeProcessMemory.copyArray(UInt64.self, at: write, count: words) ?? [], count: count)
            described = reads.map { ($0, writes.contains($0) ? "in,out" : "in") } + writes.filter { !reads.contains($0) }.map { ($0, "out") }
            observation.descriptorCount = described.count
        case .epoll(let descriptor):
            let set = IOCall.epollDescriptors(fdinfo: SmallFile.text("/proc/self/fdinfo/\(descriptor)", limit: 1 << 20) ?? "")
            observation.descriptorCount = set.count
            described = set.map { ($0.0, $0.1) }
        case .sleep(let clock, let absolute, let request):
            observation.sleep = sleepLook(tid: tid, key: key, clock: clock, absolute: absolute, request: request)
            observation.owner = .none("a sleep has no owner: it ends when its time is up")
            return observation
        }
        observation.endpoints = described.prefix(IOCall.maxDescriptors).map { descriptor, events in
            var endpoint = naming.name(descriptor, waiter: tid, direction: direction ?? Self.direction(events), connectingTo: connectingTo)
            endpoint.events = events
            endpoint.peerLooks = endpoint.peers.prefix(4).compactMap { look(at: $0) }
            return endpoint
        }
        observation.owner = Self.ioOwner(observation.endpoints, count: observation.descriptorCount)
        return observation
    }

    /// What a multiplexed wait's events make it wait for.
    static func direction(_ events: String?) -> IOCall.IODirection? {
        guard let events else { return nil }
        return events.contains("in") ? .read : events.contains("out") ? .write : nil
    }

    /// The holder of an I/O wait: the one process or thread at the other end of its one descriptor.
    static func ioOwner(_ endpoints: [EndpointLook], count: Int?) -> WaitOwner {
        if endpoints.count > 1 || (count ?? 1) > 1 {
            return .unknown("a wait on \(count ?? endpoints.count) descriptors: each is named in endpoints")
        }
        guard let endpoint = endpoints.first else { return .unknown("no descriptor could be read") }
        if endpoint.peers.count == 1 { return endpoint.peers[0] }
        if endpoint.peers.count > 1 { return .unknown("\(endpoint.peers.count) hold the other end: see endpoints") }
        let note = endpoint.peerNote ?? "the other end could not be named"
        return ["file", "eventfd", "timerfd", "signalfd", "epoll"].contains(endpoint.type) ? .none(note) : .unknown(note)
    }

    /// A sleep's asked time, from the `timespec` the call was given (this process's memory), and
    /// what is left: exact for an absolute time, at most for a relative one (from the first look
    /// that found the thread in this very call).
    private func sleepLook(tid: Int32, key: [UInt], clock: Int32, absolute: Bool, request: UInt) -> SleepLook {
        let names: [Int32: String] = [0: "realtime", 1: "monotonic", 7: "boottime", 8: "realtime-alarm", 9: "boottime-alarm", 11: "tai"]
        var look = SleepLook(clock: names[clock] ?? "clock \(clock)", absolute: absolute)
        guard let time = UnsafeProcessMemory.copy(timespec.self, at: request), let asked = Self.microseconds(time) else { return look }
        let now = SystemMonotonicClock().microseconds()
        if absolute {
            var current = timespec()
            clock_gettime(clock, &current)
            guard let at = Self.microseconds(current) else { return look }
            look.leftMicroseconds = asked > at ? asked - at : 0
            return look
        }
        look.requestedMicroseconds = asked
        let first = sleepsSeen.withLock { seen -> UInt64 in
            if let known = seen[tid], known.key == key { return known.microseconds }
            seen[tid] = (key, now)
            return now
        }
        let elapsed = now - min(now, first)
        look.leftMicroseconds = asked > elapsed ? asked - elapsed : 0
        return look
    }

    /// A `timespec` in microseconds; nil for one no call accepts (negative, nanoseconds past a
    /// second) or past 2^40 seconds (a sleep "forever": 35,000 years), which would overflow.
    static func microseconds(_ time: timespec) -> UInt64? {
        guard time.tv_sec >= 0, time.tv_sec < 1 << 40, time.tv_nsec >= 0, time.tv_nsec < 1_000_000_000 else { return nil }
        return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1000
    }

    /// The child process a `wait4`/`waitid` waits for.
    static func child(_ pid: Int32) -> WaitOwner {
        if pid > 0 { return access("/proc/\(pid)", F_OK) == 0 ? .process(pid) : .unknown("child \(pid) is gone") }
        let children = ProcessThreadList.current().flatMap { tid -> [Int32] in
            (SmallFile.text("/proc/self/task/\(tid)/children") ?? "").split(separator: " ").compactMap { Int32($0) }
        }
        if pid == -1, children.count == 1 { return .process(children[0]) }
        let which = pid == -1 ? "any child" : "any child of process group \(-pid)"
        return .none("waits for \(which) (\(children.count) running: \(children.prefix(8).map(String.init).joined(separator: ", ")))")
    }

    /// The process holding a lock on the file `descriptor` names, from `/proc/locks`.
    static func fileLockOwner(_ descriptor: Int32) -> (WaitOwner, String?) {
        var info = stat()
        guard stat("/proc/self/fd/\(descriptor)", &info) == 0 else { return (.unknown("the file descriptor could not be read"), nil) }
        let file = LockOwners.fileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        guard let text = SmallFile.text("/proc/locks", limit: 4 << 20) else { return (.unknown("/proc/locks could not be read"), file) }
        let holders = LockOwners.fileLockHolders(LockOwners.parseLocks(text), file: file)
        guard let holder = holders.first else { return (.free, file) }
        if holder == getpid() { return (.unknown("held by this process, through another open file"), file) }
        return (.process(holder), file)
    }

    /// The holder: its name, state, system call and, for a thread of this process, its stack.
    private func look(at owner: WaitOwner, sample given: StackSample? = nil) -> HolderLook? {
        switch owner {
        case .thread(let tid):
            let task = ProcTask(tid: tid)
            var look = HolderLook(owner: owner, name: task.name())
            let sample = given ?? stack(of: tid)
            look.sample = sample.flatMap { $0.frames.isEmpty ? nil : $0 }
            look.state = sample?.state
            look.syscall = sample?.syscall
            if look.sample == nil {
                look.stackError = Self.holderStackError(sample, signalled: signalsHolders)
            }
            return look
        case .process(let pid):
            let name = SmallFile.text("/proc/\(pid)/comm").map { $0.trimmingCharacters(in: .newlines) }
            let state = ProcStat.read(pid: pid)?.state
            var syscall: Int?
            if case .inSyscall(let number, _, _, _)? = SmallFile.text("/proc/\(pid)/syscall").flatMap(ProcTask.parseSyscall) {
                syscall = number
            }
            // This very process at the other end of a pipe or socket, no thread of it in a call on
            // that end: the end is held, but by no thread in particular.
            let why = pid == getpid()
                ? "this process: none of its threads is in a call on the other end" : "another process: its stack is not read"
            return HolderLook(owner: owner, name: name, state: state, syscall: syscall, stackError: why)
        case .free, .none, .unknown:
            return nil
        }
    }

    /// Why a holder's look has no stack.
    static func holderStackError(_ sample: StackSample?, signalled: Bool) -> String {
        guard let sample else { return "thread exited" }
        if !signalled, sample.state == "R" || sample.failure == .debuggerAttached || sample.failure == .threadNotAttached {
            return "on a CPU: no capture signal is sent at this look (a dump, or a debugger attached)"
        }
        return sample.failure.map { "\($0.rawValue): \($0.message)" } ?? "thread exited"
    }

    /// A chain link: what holder `tid` waits on in turn (nil when nothing nameable).
    private func link(of tid: Int32, already sample: StackSample?) -> WaitLink? {
        guard let sample = sample ?? stack(of: tid), let object = Self.object(of: sample, images: images?.current) else { return nil }
        let (owner, file) = self.owner(of: object)
        return WaitLink(tid: tid, name: ProcTask(tid: tid).name(), object: object, file: file, owner: owner, holder: look(at: owner))
    }

    /// A sample of thread `tid` of this process, never by signal: walked from `/proc` when it is
    /// blocked in a call (the bounds of its stack from the mapping that holds its stack pointer).
    private func stack(of tid: Int32) -> StackSample? {
        let task = ProcTask(tid: tid)
        guard let startTime = task.stat()?.startTimeTicks else { return nil }
        let known = holders.withLock { $0[tid] }
        var entry: (sampler: LinuxStackSampler, thread: MonitoredThread, last: StackSample?)
        if let known, known.thread.startTimeTicks == startTime {
            entry = known
        } else {
            var thread = MonitoredThread(tid: tid, startTimeTicks: startTime, stackLow: 0, stackHigh: 0, name: task.name(), isMain: tid == getpid())
            var mappings: [StackMapping]?
            StackMapping.boundBlockedThread(&thread, mappings: &mappings)
            entry = (
                inspection.sampler(signal: captureSignal, maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds),
                thread, nil
            )
        }
        if entry.thread.stackHigh == 0 {
            // Not blocked when first seen (no stack pointer from /proc): try again for the bounds.
            var mappings: [StackMapping]?
            StackMapping.boundBlockedThread(&entry.thread, mappings: &mappings)
        }
        let sample = entry.sampler.sample(entry.thread, previous: entry.last, signalAllowed: signalsHolders)
        entry.last = sample
        holders.withLock { $0[tid] = entry }
        return sample
    }

    private func forgetHoldersGone(keeping: Set<Int32>) {
        holders.withLock { $0 = $0.filter { keeping.contains($0.key) } }
    }
}

/// The C library's waiting functions, by where each starts in this process (`dlsym`), and the
/// internal functions some of them tail-call.
///
/// A timed form often only sets its clock and jumps: glibc 2.36's `pthread_mutex_timedlock` is
/// `mov; xor; jmp __pthread_mutex_clocklock_common`, so its own frame is never on the waiting
/// stack, only the internal function's, which no symbol names. The jump's target (the first
/// `jmp rel32` in the exported function's first bytes, x86_64) is that function's start, and
/// counts as the same kind of wait. A stray `0xe9` byte read as a jump gives an address that is
/// never the start of a function on a waiting stack (frames are matched by the starts the unwind
/// tables give), so it matches nothing.
enum LibcWaitFunctions {
    static let byStart: [UInt: WaitFunction] = {
        var table: [UInt: WaitFunction] = [:]
        let anyImage: UnsafeMutableRawPointer? = nil  // glibc's RTLD_DEFAULT
        for function in WaitFunction.allCases {
            for symbol in function.symbols {
                guard let address = dlsym(anyImage, symbol).map({ UInt(bitPattern: $0) }) else { continue }
                table[address] = function
                if let target = tailJumpTarget(of: address), table[target] == nil { table[target] = function }
            }
        }
        return table
    }()

    /// How far into an exported function a tail jump is looked for.
    static let tailJumpWindow = 24

    /// The target of the first `jmp rel32` (`e9`) among the first `tailJumpWindow` bytes at
    /// `address`; nil where there is none (or off x86_64).
    static func tailJumpTarget(of address: UInt) -> UInt? {
        #if arch(x86_64)
        guard let code = UnsafeProcessMemory.copyArray(UInt8.self, at: address, count: tailJumpWindow + 4) else { return nil }
        return tailJumpTarget(in: code, at: address)
        #else
        return nil
        #endif
    }

    /// `tailJumpTarget(of:)` on `code`, the bytes at `address`.
    static func tailJumpTarget(in code: [UInt8], at address: UInt) -> UInt? {
        for offset in 0..<min(tailJumpWindow, max(0, code.count - 4)) where code[offset] == 0xe9 {
            let displacement = Int32(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(code[offset + 1 + $1]) << (8 * UInt32($1)) })
            return UInt(bitPattern: Int(bitPattern: address) &+ offset &+ 5 &+ Int(displacement))
        }
        return nil
    }
}
