import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One kind of wait: a holder (a named thread, or another process) takes the object and keeps it
/// `holdMicroseconds` (sleeping, in a function named after what it does), and the main thread, on
/// its run loop, waits for it. The names are what the reports must show: the waiting function
/// (`waitFor…`) and the holding one (`refreshCache`, `crunchNumbers`).
final class WaitScenario: @unchecked Sendable {
    let waitCase: String
    let holdMicroseconds: UInt32
    let held = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private let mutex = Mutex(0)
    private let condition = NSCondition()
    private var signalled = false
    private var rwlock = pthread_rwlock_t()
    private var timedMutex = pthread_mutex_t()
    var holderTid: Int32 = 0
    var holderPid: pid_t = 0

    init(case waitCase: String, holdMicroseconds: UInt32) {
        self.waitCase = waitCase
        self.holdMicroseconds = holdMicroseconds
        pthread_rwlock_init(&rwlock, nil)
        pthread_mutex_init(&timedMutex, nil)
    }

    /// Runs on the main thread, inside a timer's callback: the hang.
    func run() {
        switch waitCase {
        case "mutex":
            startHolder("cache-refresh") { [self] in lock.lock(); held.signal(); refreshCache(); lock.unlock() }
            announce()
            waitForCacheLock()
        case "timed-mutex":
            startHolder("cache-refresh") { [self] in
                pthread_mutex_lock(&timedMutex)
                held.signal()
                refreshCache()
                pthread_mutex_unlock(&timedMutex)
            }
            announce()
            waitForTimedLock()
        case "nslock-before":
            startHolder("cache-refresh") { [self] in lock.lock(); held.signal(); refreshCache(); lock.unlock() }
            announce()
            waitForCacheLockBeforeADeadline()
        case "condition-mutex":
            // NSCondition: the main thread waits on it; thread "cache-refresh" takes its mutex
            // (once the wait released it), signals, and keeps the mutex: woken, the main thread
            // waits to take it again.
            condition.lock()
            let waiter = currentTID()
            startHolder("cache-refresh") { [self] in
                condition.lock()
                signalled = true
                condition.signal()
                FileHandle.standardOutput.write(Data("{\"waiterTid\": \(waiter), \"holderTid\": \(holderTid)}\n".utf8))
                refreshCache()
                condition.unlock()
            }
            waitForSignalThenLock()
        case "swift-mutex":
            startHolder("cache-refresh") { [self] in mutex.withLock { _ in held.signal(); refreshCache() } }
            announce()
            waitForSwiftMutex()
        case "computing-mutex":
            startHolder("eval-ledger") { [self] in lock.lock(); held.signal(); computeLedger(); lock.unlock() }
            announce()
            waitForCacheLock()
        case "computing-swift-mutex":
            startHolder("eval-ledger") { [self] in mutex.withLock { _ in held.signal(); computeLedger() } }
            announce()
            waitForSwiftMutex()
        case "computing-worker-mutex":
            // The holder is a libdispatch worker (its mask blocks every signal but a few).
            DispatchQueue(label: "ledger").async { [self] in
                holderTid = currentTID()
                lock.lock()
                held.signal()
                computeLedger()
                lock.unlock()
            }
            announce()
            waitForCacheLock()
        case "rwlock":
            startHolder("cache-refresh") { [self] in
                pthread_rwlock_wrlock(&rwlock)
                held.signal()
                refreshCache()
                pthread_rwlock_unlock(&rwlock)
            }
            announce()
            waitForReadLock()
        case "timed-rwlock":
            startHolder("cache-refresh") { [self] in
                pthread_rwlock_wrlock(&rwlock)
                held.signal()
                refreshCache()
                pthread_rwlock_unlock(&rwlock)
            }
            announce()
            waitForReadLockBeforeADeadline()
        case "join":
            let thread = startJoinable("cruncher") { [self] in held.signal(); crunchNumbers() }
            announce()
            waitForCruncher(thread)
        case "child":
            holderPid = spawn(["/bin/sleep", String(Double(holdMicroseconds) / 1e6)])
            announce()
            waitForChild()
        case "file-lock":
            let path = FileManager.default.temporaryDirectory.path + "/hangwatch-waits-\(getpid()).lock"
            FileManager.default.createFile(atPath: path, contents: nil)
            holderPid = spawn(["/usr/bin/flock", path, "/bin/sleep", String(Double(holdMicroseconds) / 1e6)])
            let descriptor = open(path, O_RDWR | O_CLOEXEC)
            // Wait until the other process holds it.
            while flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
                flock(descriptor, LOCK_UN)
                usleep(1000)
            }
            announce()
            waitForFileLock(descriptor)
            close(descriptor)
            unlink(path)
        case "semaphore":
            announce()
            waitForSemaphore()
        case "deadlock":
            deadlock()
        case "timed-deadlock":
            deadlock(timed: true)
        case "pool-mutex":
            startHolder("cache-refresh") { [self] in lock.lock(); held.signal(); refreshCache(); lock.unlock() }
            announce()
            let done = DispatchSemaphore(value: 0)
            Task.detached { [self] in
                await waitForCacheLockInATask()
                done.signal()
            }
            done.wait()
        case "pool-starved":
            // Twice as many tasks as the pool has threads, each waiting for the lock: every pool
            // thread is held, the pool watch's probe does not start, one report holds them all.
            startHolder("cache-refresh") { [self] in lock.lock(); held.signal(); refreshCache(); lock.unlock() }
            announce()
            let group = DispatchGroup()
            for _ in 0..<(2 * ProcessInfo.processInfo.activeProcessorCount) {
                group.enter()
                Task.detached { [self] in
                    await waitForCacheLockInATask()
                    group.leave()
                }
            }
            group.wait()
        case "tcp-process", "unix-thread", "pipe", "sleep", "poll", "syn-sent", "unix-process":
            runIO()
        default:
            fail("unknown case \(waitCase)")
        }
    }

    /// Prints who holds the object, once it is held.
    func announce() {
        if holderPid == 0 && !["semaphore", "sleep"].contains(waitCase) { held.wait() }
        var fields = ["\"waiterTid\": \(currentTID())"]
        if holderTid != 0 { fields.append("\"holderTid\": \(holderTid)") }
        if holderPid != 0 { fields.append("\"holderPid\": \(holderPid)") }
        FileHandle.standardOutput.write(Data(("{" + fields.joined(separator: ", ") + "}\n").utf8))
    }

    func startHolder(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            nameThread(name)
            holderTid = currentTID()
            started.signal()
            body()
        }
        thread.start()
        started.wait()
    }

    /// A thread `pthread_join` can wait for (Foundation's threads are detached).
    private func startJoinable(_ name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        final class Start {
            let name: String
            let body: @Sendable () -> Void
            let scenario: WaitScenario
            init(name: String, body: @escaping @Sendable () -> Void, scenario: WaitScenario) {
                self.name = name
                self.body = body
                self.scenario = scenario
            }
        }
        var thread = pthread_t()
        let start = Unmanaged.passRetained(Start(name: name, body: body, scenario: self)).toOpaque()
        let created = pthread_create(&thread, nil, { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            nameThread(start.name)
            start.scenario.holderTid = currentTID()
            start.body()
            return nil
        }, start)
        guard created == 0 else { fail("pthread_create failed", code: 3) }
        return thread
    }

    private func spawn(_ arguments: [String]) -> pid_t {
        var pid: pid_t = 0
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        guard posix_spawn(&pid, arguments[0], nil, nil, argv, environ) == 0 else { fail("could not start \(arguments[0])", code: 3) }
        return pid
    }

    /// Counts what the waits did after their call, so that no call is the function's last (a
    /// release build would make it a jump, and the function would leave no frame on the stack).
    var after = 0

    @inline(never) func refreshCache() {
        usleep(holdMicroseconds)
        after &+= 1
    }

    /// Computes for `holdMicroseconds` without a system call (the clock is read through the vDSO).
    @inline(never) func computeLedger() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let end = Int(now.tv_sec) * 1_000_000 + Int(now.tv_nsec) / 1000 + Int(holdMicroseconds)
        var state: UInt64 = 1
        while Int(now.tv_sec) * 1_000_000 + Int(now.tv_nsec) / 1000 < end {
            for _ in 0..<20_000 { state = state &* 6_364_136_223_846_793_005 &+ 1 }
            clock_gettime(CLOCK_MONOTONIC, &now)
        }
        after &+= Int(state & 1) + 5
    }

    @inline(never) func crunchNumbers() {
        usleep(holdMicroseconds)
        after &+= 2  // not refreshCache's twin: identical functions are merged into one
    }

    @inline(never) func waitForCacheLock() {
        lock.lock()
        lock.unlock()
    }

    /// `pthread_mutex_timedlock`, with a deadline far past the hold: the wait every lock with a
    /// timeout makes.
    @inline(never) func waitForTimedLock() {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += 60
        if pthread_mutex_timedlock(&timedMutex, &deadline) == 0 { pthread_mutex_unlock(&timedMutex) }
    }

    /// `pthread_rwlock_timedrdlock`, a deadline far past the hold.
    @inline(never) func waitForReadLockBeforeADeadline() {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += 60
        if pthread_rwlock_timedrdlock(&rwlock, &deadline) == 0 { pthread_rwlock_unlock(&rwlock) }
    }

    /// `NSLock.lock(before:)`.
    @inline(never) func waitForCacheLockBeforeADeadline() {
        if lock.lock(before: Date().addingTimeInterval(60)) { lock.unlock() }
    }

    /// Waits on the condition (its mutex held) until signalled; returns once it has the mutex again.
    @inline(never) func waitForSignalThenLock() {
        while !signalled { condition.wait() }
        condition.unlock()
        after &+= 6
    }

    @inline(never) func waitForSwiftMutex() {
        mutex.withLock { _ in }
        after &+= 1
    }

    @inline(never) func waitForReadLock() {
        pthread_rwlock_rdlock(&rwlock)
        pthread_rwlock_unlock(&rwlock)
    }

    @inline(never) func waitForCruncher(_ thread: pthread_t) {
        pthread_join(thread, nil)
        after &+= 1
    }

    @inline(never) func waitForChild() {
        var status: Int32 = 0
        waitpid(holderPid, &status, 0)
        after &+= 1
    }

    @inline(never) func waitForFileLock(_ descriptor: Int32) {
        flock(descriptor, LOCK_EX)
        flock(descriptor, LOCK_UN)
    }

    @inline(never) func waitForSemaphore() {
        _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .microseconds(Int(holdMicroseconds)))
        after &+= 1
    }

    @inline(never) func waitForCacheLockInATask() async {
        waitForCacheLockFromATask()
    }

    @inline(never) func waitForCacheLockFromATask() {
        lock.lock()
        lock.unlock()
    }

    /// The main thread takes lock A then wants B; "deadlock-peer" takes B then wants A. Never ends.
    /// `timed`: the second lock is taken with `lock(before:)`, a deadline an hour away (a timed
    /// wait is a deadlock while it lasts).
    private func deadlock(timed: Bool = false) {
        let lockA = NSLock(), lockB = NSLock()
        let mainHasA = DispatchSemaphore(value: 0)
        startHolder("deadlock-peer") { [self] in
            lockB.lock()
            held.signal()
            mainHasA.wait()
            takeSecondLock(lockA, timed: timed)
        }
        lockA.lock()
        mainHasA.signal()
        announce()
        takeSecondLock(lockB, timed: timed)
    }

    @inline(never) func takeSecondLock(_ lock: NSLock, timed: Bool) {
        if timed {
            _ = lock.lock(before: Date().addingTimeInterval(3600))
        } else {
            lock.lock()
        }
        after &+= 1
    }
}

/// The calling thread's id (`/proc/thread-self` names it).
func currentTID() -> Int32 {
    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return Int32(target.split(separator: "/").last ?? "") ?? 0
}

/// Names the calling thread (15 bytes at most), as `/proc/<pid>/task/<tid>/comm` shows it.
func nameThread(_ name: String) {
    let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
}
