import CStackCorpus
import Dispatch
import Foundation
import Synchronization

// The blocking cases. Each blocks the calling (main) thread in one kind of system call, under a
// call chain of its own (distinct, never-inlined functions), until `release` runs. A blocking call
// cut short by the ground-truth signal (EINTR) is simply made again.

/// Set by the controller to let the current case return.
let released = Atomic<Bool>(false)
/// Set by a case just before it blocks.
let entered = Atomic<Bool>(false)
/// Blocking calls that returned EINTR. The differential mode causes them on purpose (its ground
/// truth is a signal); a monitored service must never see one.
let interruptions = Atomic<Int>(0)

/// Counts a blocking call's -1/EINTR result.
@inline(__always) func noteEINTR(_ result: Int) {
    if result == -1 && errno == EINTR { interruptions.add(1, ordering: .relaxed) }
}

struct CorpusCase: Sendable {
    /// What the main thread blocks in.
    var name: String
    /// On a CPU (sampled with the capture signal) rather than blocked in a system call.
    var running = false
    /// Runs on the corpus's SwiftNIO event loop thread (`CorpusEventLoop`), not the main thread.
    var onEventLoop = false
    /// The call chain under the blocking call, innermost first (for the output).
    var chain: [String]
    /// Prepares one run: returns what the main thread runs and what releases it.
    var prepare: @Sendable () throws -> Run
}

struct Run: Sendable {
    /// On the main thread: the chain; returns once released.
    var block: @Sendable () -> Void
    /// On the controller thread.
    var release: @Sendable () -> Void
    /// `block` only schedules the work (on the main queue); the work signals `finished` itself.
    var completesItself = false
}

struct CorpusError: Error, CustomStringConvertible {
    var description: String
}

/// Two pipe ends; released by writing one byte.
final class Pipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw CorpusError(description: "pipe: \(errno)") }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}

@inline(never) func markEntered() {
    entered.store(true, ordering: .sequentiallyConsistent)
}

// MARK: read (pipe)

@inline(never) func pipeReadHandler(_ fd: Int32) { corpus_keep(churn(101)); pipeReadMiddle(fd); corpus_keep(101) }
@inline(never) func pipeReadMiddle(_ fd: Int32) { corpus_keep(churn(102)); blockingPipeRead(fd); corpus_keep(102) }
@inline(never) func blockingPipeRead(_ fd: Int32) {
    corpus_keep(churn(145))
    markEntered()
    var byte: UInt8 = 0
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            noteEINTR(Int(read(fd, &byte, 1)))
        }
        scratch[0] = 1
    }
    corpus_keep(126)
}

// MARK: read (socket)

@inline(never) func socketReadHandler(_ fd: Int32) { corpus_keep(churn(103)); socketReadInner(fd); corpus_keep(103) }
@inline(never) func socketReadInner(_ fd: Int32) {
    corpus_keep(churn(146))
    markEntered()
    var byte: UInt8 = 0
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            noteEINTR(Int(read(fd, &byte, 1)))
        }
        scratch[0] = 1
    }
    corpus_keep(127)
}

// MARK: poll, select, epoll_wait

@inline(never) func pollOuter(_ fd: Int32) { corpus_keep(churn(104)); pollInner(fd); corpus_keep(104) }
@inline(never) func pollInner(_ fd: Int32) {
    corpus_keep(churn(147))
    markEntered()
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            noteEINTR(Int(poll(&entry, 1, -1)))
        }
        scratch[0] = 1
    }
    corpus_keep(128)
}

@inline(never) func selectOuter(_ fd: Int32) { corpus_keep(churn(105)); selectMiddle(fd); corpus_keep(105) }
@inline(never) func selectMiddle(_ fd: Int32) { corpus_keep(churn(106)); selectInner(fd); corpus_keep(106) }
@inline(never) func selectInner(_ fd: Int32) {
    corpus_keep(churn(148))
    markEntered()
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            var set = fd_set()
            withUnsafeMutableBytes(of: &set) { raw in
                raw.storeBytes(of: raw.load(fromByteOffset: Int(fd / 64) * 8, as: UInt64.self) | (1 << UInt64(fd % 64)),
                               toByteOffset: Int(fd / 64) * 8, as: UInt64.self)
            }
            noteEINTR(Int(select(fd + 1, &set, nil, nil, nil)))
        }
        scratch[0] = 1
    }
    corpus_keep(129)
}

@inline(never) func epollOuter(_ epoll: Int32) { corpus_keep(churn(107)); epollInner(epoll); corpus_keep(107) }
@inline(never) func epollInner(_ epoll: Int32) {
    corpus_keep(churn(149))
    markEntered()
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            noteEINTR(Int(corpus_epoll_wait_one(epoll)))
        }
        scratch[0] = 1
    }
    corpus_keep(130)
}

// MARK: sleeping

@inline(never) func sleepOuter() { corpus_keep(churn(108)); sleepInner(); corpus_keep(108) }
@inline(never) func sleepInner() {
    corpus_keep(churn(150))
    markEntered()
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            noteEINTR(Int(usleep(200_000)))
        }
        scratch[0] = 1
    }
    corpus_keep(131)
}

@inline(never) func clockSleepOuter() { corpus_keep(churn(109)); clockSleepMiddle(); corpus_keep(109) }
@inline(never) func clockSleepMiddle() { corpus_keep(churn(110)); clockSleepInner(); corpus_keep(110) }
@inline(never) func clockSleepInner() {
    corpus_keep(churn(151))
    markEntered()
    var request = timespec(tv_sec: 0, tv_nsec: 200_000_000)
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            if clock_nanosleep(CLOCK_MONOTONIC, 0, &request, nil) == EINTR { interruptions.add(1, ordering: .relaxed) }
        }
        scratch[0] = 1
    }
    corpus_keep(132)
}

// MARK: futex: mutex, condition variable, DispatchSemaphore

/// A pthread mutex and condition variable in memory that never moves.
final class PthreadSync: @unchecked Sendable {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }
    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }
}

@inline(never) func mutexOuter(_ sync: PthreadSync) { corpus_keep(churn(111)); mutexInner(sync); corpus_keep(111) }
@inline(never) func mutexInner(_ sync: PthreadSync) {
    corpus_keep(churn(152))
    markEntered()
    pthread_mutex_lock(sync.mutex)
    pthread_mutex_unlock(sync.mutex)
    corpus_keep(133)
}

@inline(never) func conditionOuter(_ sync: PthreadSync) { corpus_keep(churn(112)); conditionMiddle(sync); corpus_keep(112) }
@inline(never) func conditionMiddle(_ sync: PthreadSync) { corpus_keep(churn(113)); conditionInner(sync); corpus_keep(113) }
@inline(never) func conditionInner(_ sync: PthreadSync) {
    pthread_mutex_lock(sync.mutex)
    corpus_keep(churn(153))
    markEntered()
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            pthread_cond_wait(sync.condition, sync.mutex)
        }
        scratch[0] = 1
    }
    pthread_mutex_unlock(sync.mutex)
    corpus_keep(134)
}

@inline(never) func semaphoreOuter(_ semaphore: DispatchSemaphore) { corpus_keep(churn(114)); semaphoreInner(semaphore); corpus_keep(114) }
@inline(never) func semaphoreInner(_ semaphore: DispatchSemaphore) {
    corpus_keep(churn(154))
    markEntered()
    semaphore.wait()
    corpus_keep(135)
}

// MARK: accept, wait4, flock, sigtimedwait

@inline(never) func acceptOuter(_ listener: Int32) { corpus_keep(churn(115)); acceptInner(listener); corpus_keep(115) }
@inline(never) func acceptInner(_ listener: Int32) {
    corpus_keep(churn(155))
    markEntered()
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            let connection = accept(listener, nil, nil)
            noteEINTR(Int(connection))
            if connection >= 0 { close(connection) }
        }
        scratch[0] = 1
    }
    corpus_keep(136)
}

@inline(never) func childWaitOuter(_ child: pid_t) { corpus_keep(churn(116)); childWaitInner(child); corpus_keep(116) }
@inline(never) func childWaitInner(_ child: pid_t) {
    corpus_keep(churn(156))
    markEntered()
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 && errno == EINTR { interruptions.add(1, ordering: .relaxed) }
    corpus_keep(137)
}

@inline(never) func fileLockOuter(_ path: String) { corpus_keep(churn(117)); fileLockMiddle(path); corpus_keep(117) }
@inline(never) func fileLockMiddle(_ path: String) { corpus_keep(churn(118)); fileLockInner(path); corpus_keep(118) }
@inline(never) func fileLockInner(_ path: String) {
    let fd = open(path, O_RDWR | O_CLOEXEC)
    corpus_keep(churn(157))
    markEntered()
    while flock(fd, LOCK_EX) != 0 && errno == EINTR { interruptions.add(1, ordering: .relaxed) }
    flock(fd, LOCK_UN)
    close(fd)
    corpus_keep(138)
}

@inline(never) func signalWaitOuter() { corpus_keep(churn(119)); signalWaitInner(); corpus_keep(119) }
@inline(never) func signalWaitInner() {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGUSR2)
    pthread_sigmask(SIG_BLOCK, &set, nil)
    corpus_keep(churn(158))
    markEntered()
    var timeout = timespec(tv_sec: 30, tv_nsec: 0)
    // Waits for the release signal itself, not for `released`: the flag is set just before the
    // signal is sent, and a thread woken in between (a capture signal's EINTR) that unblocked
    // SIGUSR2 would be killed by it (seen: the corpus died of SIGUSR2 about once in 30 runs).
    withStackBuffer { scratch in
        while true {
            let received = sigtimedwait(&set, nil, &timeout)
            if received == SIGUSR2 { break }
            noteEINTR(Int(received))
        }
        scratch[0] = 1
    }
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    corpus_keep(139)
}

// MARK: through C, a generic function, a closure

/// The pipe the C case reads, reached from the C callback.
nonisolated(unsafe) var cCaseDescriptor: Int32 = -1

@inline(never) func cCallerOuter(_ fd: Int32) {
    cCaseDescriptor = fd
    corpus_c_caller({ _ in cCalledBack() }, nil)
    corpus_keep(140)
}
@inline(never) func cCalledBack() { corpus_keep(churn(120)); blockingReadThroughC(cCaseDescriptor); corpus_keep(120) }
@inline(never) func blockingReadThroughC(_ fd: Int32) {
    corpus_keep(churn(159))
    markEntered()
    var byte: UInt8 = 0
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            noteEINTR(Int(read(fd, &byte, 1)))
        }
        scratch[0] = 1
    }
    corpus_keep(141)
}

protocol CorpusBlocker {
    func block()
}

struct PipeBlocker: CorpusBlocker {
    let fd: Int32
    @inline(never) func block() {
        corpus_keep(churn(160))
        markEntered()
        var byte: UInt8 = 0
        withStackBuffer { scratch in
            while !released.load(ordering: .relaxed) {
                noteEINTR(Int(read(fd, &byte, 1)))
            }
            scratch[0] = 1
        }
        corpus_keep(142)
    }
}

@inline(never) func genericOuter(_ fd: Int32) { corpus_keep(churn(121)); genericBlock(PipeBlocker(fd: fd) as any CorpusBlocker); corpus_keep(121) }
@inline(never) func genericBlock<B: CorpusBlocker>(_ blocker: B) { corpus_keep(churn(122)); blocker.block(); corpus_keep(122) }
@inline(never) func genericBlock(_ blocker: any CorpusBlocker) { corpus_keep(churn(123)); genericBlockOpened(blocker); corpus_keep(123) }
@inline(never) func genericBlockOpened<B: CorpusBlocker>(_ blocker: B) { corpus_keep(churn(124)); blocker.block(); corpus_keep(124) }

@inline(never) func closureOuter(_ fd: Int32) {
    runClosure {
        corpus_keep(churn(161))
        markEntered()
        var byte: UInt8 = 0
        withStackBuffer { scratch in
            while !released.load(ordering: .relaxed) {
                noteEINTR(Int(read(fd, &byte, 1)))
            }
            scratch[0] = 1
        }
    }
    corpus_keep(143)
}
@inline(never) func runClosure(_ body: () -> Void) { corpus_keep(churn(125)); body(); corpus_keep(125) }

/// Runs `body` with 512 uninitialised bytes on the stack, as a handler that reads into a stack
/// buffer has: whatever earlier calls left there stays there while it blocks.
@inline(__always) func withStackBuffer(_ body: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 512) { scratch in
        corpus_use(scratch.baseAddress)
        body(scratch)
        corpus_keep(Int32(scratch[0]))
    }
}

/// Work a handler does before it blocks: a clock read, formatting, a sort. Its callees leave their
/// frame records on the stack where the blocking function's frame will be, as real handlers do.
@inline(never) func churn(_ seed: Int32) -> Int32 {
    let now = Date()
    let text = "\(seed) \(now.timeIntervalSince1970) \(DispatchTime.now().uptimeNanoseconds)"
    var values = Array(text.utf8).map(Int32.init)
    values.sort()
    return values.reduce(seed, &+)
}

// MARK: a frame with a dynamic size (its prologue does not say where its frame pointer is)

/// A size the optimizer cannot know: the frame's stack allocation happens at run time.
let dynamicSize = Int(getpid() % 7) + 200

@inline(never) func dynamicFrameOuter(_ fd: Int32) { corpus_keep(churn(171)); dynamicFrameRead(fd); corpus_keep(171) }
@inline(never) func dynamicFrameRead(_ fd: Int32) {
    corpus_keep(churn(172))
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: dynamicSize) { buffer in
        corpus_use(buffer.baseAddress)
        markEntered()
        while !released.load(ordering: .relaxed) {
            noteEINTR(Int(read(fd, buffer.baseAddress, 1)))
        }
        corpus_keep(Int32(buffer[0]))
    }
    corpus_keep(173)
}

@inline(never) func dynamicPollOuter(_ fd: Int32) { corpus_keep(churn(174)); dynamicPollMiddle(fd); corpus_keep(174) }
@inline(never) func dynamicPollMiddle(_ fd: Int32) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: dynamicSize * 2) { buffer in
        corpus_use(buffer.baseAddress)
        corpus_keep(churn(175))
        dynamicPollInner(fd, buffer.count)
        corpus_keep(Int32(buffer[0]))
    }
    corpus_keep(176)
}
@inline(never) func dynamicPollInner(_ fd: Int32, _ size: Int) {
    corpus_keep(churn(177))
    withUnsafeTemporaryAllocation(of: pollfd.self, capacity: size / 64) { entries in
        corpus_use(entries.baseAddress)
        entries[0] = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        markEntered()
        while !released.load(ordering: .relaxed) {
            noteEINTR(Int(poll(entries.baseAddress, 1, -1)))
        }
    }
    corpus_keep(178)
}

// MARK: on a CPU, reading the clock (samples land in the vDSO and in glibc's clock functions)

@inline(never) func clockSpinOuter() { corpus_keep(churn(181)); clockSpinMiddle(); corpus_keep(181) }
@inline(never) func clockSpinMiddle() { corpus_keep(churn(182)); clockSpinInner(); corpus_keep(182) }
@inline(never) func clockSpinInner() {
    markEntered()
    var total: Double = 0
    while !released.load(ordering: .relaxed) {
        total += Date().timeIntervalSinceReferenceDate
        total += Double(DispatchTime.now().uptimeNanoseconds)
    }
    corpus_keep(Int32(truncatingIfNeeded: Int(total.truncatingRemainder(dividingBy: 1000))))
}

@inline(never) func computeOuter() { corpus_keep(churn(183)); computeInner(); corpus_keep(183) }
@inline(never) func computeInner() {
    markEntered()
    var state: UInt64 = 1
    while !released.load(ordering: .relaxed) {
        for _ in 0..<1000 { state = state &* 6_364_136_223_846_793_005 &+ 1 }
    }
    corpus_keep(Int32(truncatingIfNeeded: state))
}

// MARK: a nested run of the run loop, and a main-queue block

let nestedMode = RunLoop.Mode("HangWatchCorpusNestedMode")

@inline(never) func nestedSpinOuter() { corpus_keep(churn(191)); nestedSpinInner(); corpus_keep(191) }
@inline(never) func nestedSpinInner() {
    markEntered()
    var state: UInt64 = 7
    while !released.load(ordering: .relaxed) {
        for _ in 0..<1000 { state = state &* 2_862_933_555_777_941_757 &+ 3 }
    }
    corpus_keep(Int32(truncatingIfNeeded: state))
}

/// Runs the loop in a mode of its own until a timer there has run the spin (a modal session).
@inline(never) func runNestedLoop() {
    let done = Atomic<Bool>(false)
    let timer = Timer(timeInterval: 0, repeats: false) { _ in
        nestedSpinOuter()
        done.store(true, ordering: .relaxed)
    }
    RunLoop.current.add(timer, forMode: nestedMode)
    while !done.load(ordering: .relaxed) {
        _ = RunLoop.current.run(mode: nestedMode, before: Date(timeIntervalSinceNow: 1))
    }
    corpus_keep(192)
}

@inline(never) func mainQueueOuter() { corpus_keep(churn(193)); mainQueueInner(); corpus_keep(193) }
@inline(never) func mainQueueInner() {
    markEntered()
    var state: UInt64 = 11
    while !released.load(ordering: .relaxed) {
        for _ in 0..<1000 { state = state &* 3_935_559_000_370_003_845 &+ 5 }
    }
    corpus_keep(Int32(truncatingIfNeeded: state))
}

// MARK: the table

func socketPair() throws -> (Int32, Int32) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
        throw CorpusError(description: "socketpair: \(errno)")
    }
    return (fds[0], fds[1])
}

let corpusCases: [CorpusCase] = mainThreadCases + frameworkCases

let mainThreadCases: [CorpusCase] = [
    CorpusCase(name: "cpu-reading-the-clock", running: true, chain: ["clockSpinInner", "clockSpinMiddle", "clockSpinOuter"]) {
        Run(block: { clockSpinOuter() }, release: {})
    },
    CorpusCase(name: "cpu-computing", running: true, chain: ["computeInner", "computeOuter"]) {
        Run(block: { computeOuter() }, release: {})
    },
    CorpusCase(name: "cpu-nested-run-loop", running: true, chain: ["nestedSpinInner", "nestedSpinOuter"]) {
        Run(block: { runNestedLoop() }, release: {})
    },
    CorpusCase(name: "cpu-main-queue-block", running: true, chain: ["mainQueueInner", "mainQueueOuter"]) {
        Run(
            block: {
                DispatchQueue.main.async {
                    mainQueueOuter()
                    finished.signal()
                }
            }, release: {}, completesItself: true)
    },
    CorpusCase(name: "read-pipe", chain: ["blockingPipeRead", "pipeReadMiddle", "pipeReadHandler"]) {
        let pipe = try Pipe()
        return Run(block: { pipeReadHandler(pipe.readEnd) }, release: { pipe.wake() })
    },
    CorpusCase(name: "read-socket", chain: ["socketReadInner", "socketReadHandler"]) {
        let (a, b) = try socketPair()
        return Run(
            block: { socketReadHandler(a) },
            release: {
                var byte: UInt8 = 1
                _ = write(b, &byte, 1)
                close(b)
            })
    },
    CorpusCase(name: "poll", chain: ["pollInner", "pollOuter"]) {
        let pipe = try Pipe()
        return Run(block: { pollOuter(pipe.readEnd) }, release: { pipe.wake() })
    },
    CorpusCase(name: "select", chain: ["selectInner", "selectMiddle", "selectOuter"]) {
        let pipe = try Pipe()
        return Run(block: { selectOuter(pipe.readEnd) }, release: { pipe.wake() })
    },
    CorpusCase(name: "epoll_wait", chain: ["corpus_epoll_wait_one", "epollInner", "epollOuter"]) {
        let pipe = try Pipe()
        let epoll = corpus_epoll_watching(pipe.readEnd)
        guard epoll >= 0 else { throw CorpusError(description: "epoll: \(errno)") }
        return Run(
            block: { epollOuter(epoll) },
            release: {
                pipe.wake()
                _ = pipe
            })
    },
    CorpusCase(name: "nanosleep", chain: ["sleepInner", "sleepOuter"]) {
        Run(block: { sleepOuter() }, release: {})
    },
    CorpusCase(name: "clock_nanosleep", chain: ["clockSleepInner", "clockSleepMiddle", "clockSleepOuter"]) {
        Run(block: { clockSleepOuter() }, release: {})
    },
    CorpusCase(name: "futex-mutex", chain: ["mutexInner", "mutexOuter"]) {
        let sync = PthreadSync()
        pthread_mutex_lock(sync.mutex)
        return Run(block: { mutexOuter(sync) }, release: { pthread_mutex_unlock(sync.mutex) })
    },
    CorpusCase(name: "futex-condition", chain: ["conditionInner", "conditionMiddle", "conditionOuter"]) {
        let sync = PthreadSync()
        return Run(
            block: { conditionOuter(sync) },
            release: {
                pthread_mutex_lock(sync.mutex)
                pthread_cond_broadcast(sync.condition)
                pthread_mutex_unlock(sync.mutex)
            })
    },
    CorpusCase(name: "futex-dispatch-semaphore", chain: ["semaphoreInner", "semaphoreOuter"]) {
        let semaphore = DispatchSemaphore(value: 0)
        return Run(block: { semaphoreOuter(semaphore) }, release: { semaphore.signal() })
    },
    CorpusCase(name: "accept", chain: ["acceptInner", "acceptOuter"]) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
                bind(listener, raw, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, raw, &length) == 0
            }
        }
        guard bound else { throw CorpusError(description: "listen: \(errno)") }
        let target = address
        return Run(
            block: { acceptOuter(listener) },
            release: {
                let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var peer = target
                _ = withUnsafePointer(to: &peer) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                close(client)
            })
    },
    CorpusCase(name: "wait4", chain: ["childWaitInner", "childWaitOuter"]) {
        var child: pid_t = 0
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("60"), nil]
        defer { arguments.forEach { free($0) } }
        guard posix_spawn(&child, "/bin/sleep", nil, nil, arguments, environ) == 0 else {
            throw CorpusError(description: "posix_spawn /bin/sleep failed")
        }
        let spawned = child
        return Run(block: { childWaitOuter(spawned) }, release: { kill(spawned, SIGKILL) })
    },
    CorpusCase(name: "flock", chain: ["fileLockInner", "fileLockMiddle", "fileLockOuter"]) {
        let path = NSTemporaryDirectory() + "/hangwatch-corpus-lock-\(getpid())"
        let holder = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard holder >= 0, flock(holder, LOCK_EX) == 0 else { throw CorpusError(description: "flock: \(errno)") }
        return Run(
            block: { fileLockOuter(path) },
            release: {
                flock(holder, LOCK_UN)
                close(holder)
                unlink(path)
            })
    },
    CorpusCase(name: "sigtimedwait", chain: ["signalWaitInner", "signalWaitOuter"]) {
        let main = mainThread
        return Run(block: { signalWaitOuter() }, release: { pthread_kill(main.value, SIGUSR2) })
    },
    CorpusCase(name: "read-through-c", chain: ["blockingReadThroughC", "cCalledBack", "corpus_c_inner", "corpus_c_caller", "cCallerOuter"]) {
        let pipe = try Pipe()
        return Run(block: { cCallerOuter(pipe.readEnd) }, release: { pipe.wake() })
    },
    CorpusCase(name: "read-generic", chain: ["PipeBlocker.block", "genericBlockOpened", "genericBlock", "genericOuter"]) {
        let pipe = try Pipe()
        return Run(block: { genericOuter(pipe.readEnd) }, release: { pipe.wake() })
    },
    CorpusCase(name: "read-dynamic-frame", chain: ["dynamicFrameRead", "dynamicFrameOuter"]) {
        let pipe = try Pipe()
        return Run(block: { dynamicFrameOuter(pipe.readEnd) }, release: { pipe.wake() })
    },
    CorpusCase(name: "poll-dynamic-frames", chain: ["dynamicPollInner", "dynamicPollMiddle", "dynamicPollOuter"]) {
        let pipe = try Pipe()
        return Run(block: { dynamicPollOuter(pipe.readEnd) }, release: { pipe.wake() })
    },
    CorpusCase(name: "read-closure", chain: ["closure #1 () -> () in hangwatch_stackcorpus.closureOuter", "runClosure", "closureOuter"]) {
        let pipe = try Pipe()
        return Run(block: { closureOuter(pipe.readEnd) }, release: { pipe.wake() })
    },
]

/// The main thread's pthread, for the signal that releases `sigtimedwait`.
struct PthreadBox: @unchecked Sendable { var value: pthread_t }
nonisolated(unsafe) var mainThread = PthreadBox(value: pthread_self())
