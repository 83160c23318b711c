/// What a blocked thread waits on, decided from its system call (number and arguments, from
/// `/proc/self/task/<tid>/syscall`) and the C library function its stack is in (`WaitFunction`):
/// a pure decision, tested as a table.
///
/// The futex word's meaning depends on who waits on it: glibc's mutexes wait on `__lock` (offset
/// 0 of `pthread_mutex_t`, the owner's tid at `__owner`, offset 8), a priority-inheritance futex
/// (`FUTEX_LOCK_PI`: Swift's `Synchronization.Mutex`, `PTHREAD_PRIO_INHERIT` mutexes) holds its
/// owner's tid in the word itself, `pthread_join` waits on the joined thread's tid word (its value
/// is the tid while the thread lives), semaphores and condition variables have no owner.
enum WaitObject: Equatable, Sendable {
    /// A `pthread_mutex_t` (and what sits on one: `NSLock`, `NIOLock`): the futex word's address,
    /// which is the mutex's.
    case mutex(address: UInt)
    /// A priority-inheritance futex: the word holds the owner's tid.
    case priorityInheritanceMutex(address: UInt)
    /// A `pthread_rwlock_t`, waited on at one of its futex words (`address`).
    case rwlock(futex: UInt)
    /// `pthread_join`: the joined thread's tid word.
    case threadJoin(address: UInt)
    /// `wait4`/`waitid` for one child (`pid` > 0), any child (-1), or a process group (< -1: -pgid).
    case childProcess(pid: Int32)
    /// `flock` or a blocking `fcntl` lock on a file descriptor.
    case fileLock(descriptor: Int32)
    /// Objects without an owner: the futex word's address.
    case semaphore(address: UInt)
    case condition(address: UInt)
    case barrier(address: UInt)
    /// A wait inside libdispatch (a `DispatchSemaphore`, a `DispatchGroup`, a `sync` behind other
    /// work): no owner.
    case dispatch(address: UInt)
    /// A futex wait no C library function on the stack explains (a `DispatchGroup`, a runtime's
    /// own futex): an address, no owner known.
    case futex(address: UInt)
    /// An I/O call or a sleep (`IOCall`): named by what its descriptors are (`EndpointLook`).
    case io(IOCall)

    /// The futex word's address, for the kinds that have one.
    var address: UInt? {
        switch self {
        case .mutex(let address), .priorityInheritanceMutex(let address), .threadJoin(let address), .semaphore(let address),
            .condition(let address), .barrier(let address), .dispatch(let address), .futex(let address):
            return address
        case .rwlock(let futex): return futex
        case .childProcess, .fileLock, .io: return nil
        }
    }

    /// The report's name for the kind (`waitsFor.kind`).
    var kind: String {
        switch self {
        case .mutex: return "mutex"
        case .priorityInheritanceMutex: return "swift-mutex"
        case .rwlock: return "rwlock"
        case .threadJoin: return "thread-join"
        case .childProcess: return "child-process"
        case .fileLock: return "file-lock"
        case .semaphore: return "semaphore"
        case .condition: return "condition"
        case .barrier: return "barrier"
        case .dispatch: return "dispatch"
        case .futex: return "futex"
        case .io(.sleep): return "sleep"
        case .io(.pollArray), .io(.select), .io(.epoll): return "poll"
        case .io(.descriptor): return "descriptor"
        }
    }

    /// Why an object of this kind has no owner (or, for a bare futex, none is known), in the
    /// report's words.
    var noOwnerReason: String? {
        switch self {
        case .semaphore: return "a semaphore has no owner: any thread may post it"
        case .condition: return "a condition variable has no owner: any thread may signal it"
        case .barrier: return "a barrier has no owner: it opens when enough threads arrive"
        case .dispatch: return "a Dispatch semaphore or group has no owner: any thread may signal it"
        case .futex: return "a futex wait outside the C library's locks (a DispatchGroup, a runtime's own word): its owner, if it has one, is recorded nowhere"
        default: return nil
        }
    }

    // The futex operations.
    static let futexCommandMask: UInt = 0x7f  // without FUTEX_PRIVATE_FLAG (128), FUTEX_CLOCK_REALTIME (256)
    static let futexWait: UInt = 0, futexLockPI: UInt = 6, futexWaitBitset: UInt = 9, futexWaitRequeuePI: UInt = 11,
        futexLockPI2: UInt = 13
    // fcntl commands that wait: F_SETLKW, F_OFD_SETLKW.
    static let blockingLockCommands: Set<UInt> = [7, 38]
    // waitid's id types.
    static let idTypeAll: UInt = 0, idTypePID: UInt = 1, idTypeProcessGroup: UInt = 2

    /// The object a thread blocked in system call `number` with `arguments` waits on, `function`
    /// being the C library function its stack is in (nil when none is known); nil when the call is
    /// no wait on an object (a sleep, a read, a poll).
    static func classify(syscall number: Int, arguments: [UInt], function: WaitFunction?) -> WaitObject? {
        func argument(_ index: Int) -> UInt? { arguments.indices.contains(index) ? arguments[index] : nil }
        switch number {
        case Syscalls.futex:
            guard let address = argument(0), address != 0, let operation = argument(1) else { return nil }
            switch operation & futexCommandMask {
            case futexLockPI, futexLockPI2:
                return .priorityInheritanceMutex(address: address)
            case futexWaitRequeuePI:
                // A condition wait whose mutex is priority-inheriting: the condition has no owner.
                return .condition(address: address)
            case futexWait, futexWaitBitset:
                switch function {
                case .mutexLock?: return .mutex(address: address)
                case .rwlockLock?: return .rwlock(futex: address)
                case .join?: return .threadJoin(address: address)
                case .semaphoreWait?: return .semaphore(address: address)
                case .conditionWait?:
                    // Woken, the condition wait takes its mutex again (`__pthread_mutex_cond_lock`,
                    // which no symbol names): a plain FUTEX_WAIT for the value 2 is glibc's lock
                    // wait, on the mutex's word; the condition's own wait is a FUTEX_WAIT_BITSET.
                    if operation & futexCommandMask == futexWait, argument(2) == 2 { return .mutex(address: address) }
                    return .condition(address: address)
                case .barrierWait?: return .barrier(address: address)
                case .dispatchWait?: return .dispatch(address: address)
                case nil: return .futex(address: address)
                }
            default:
                return nil
            }
        case Syscalls.wait4:
            guard let pid = argument(0) else { return nil }
            return .childProcess(pid: Int32(truncatingIfNeeded: pid))
        case Syscalls.waitid:
            guard let type = argument(0), let id = argument(1) else { return nil }
            switch type {
            case idTypePID: return .childProcess(pid: Int32(truncatingIfNeeded: id))
            case idTypeProcessGroup: return .childProcess(pid: -Int32(truncatingIfNeeded: id))
            case idTypeAll: return .childProcess(pid: -1)
            default: return nil
            }
        case Syscalls.flock:
            guard let descriptor = argument(0) else { return nil }
            return .fileLock(descriptor: Int32(truncatingIfNeeded: descriptor))
        case Syscalls.fcntl:
            guard let descriptor = argument(0), let command = argument(1), blockingLockCommands.contains(command) else { return nil }
            return .fileLock(descriptor: Int32(truncatingIfNeeded: descriptor))
        default:
            return nil
        }
    }
}

/// The C library functions that wait on a futex for an object, found on a blocked thread's stack.
enum WaitFunction: String, CaseIterable, Sendable {
    case mutexLock, rwlockLock, join, semaphoreWait, conditionWait, barrierWait
    /// A wait libdispatch makes (its semaphores, groups, `sync`): the first frame outside the C
    /// library is libdispatch's. It exports no function that stays on such a stack.
    case dispatchWait

    /// The exported glibc functions of each kind (glibc 2.34 and later: all in libc.so.6).
    var symbols: [String] {
        switch self {
        case .mutexLock: return ["pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock", "mtx_lock", "mtx_timedlock"]
        case .rwlockLock:
            return [
                "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock",
                "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock",
            ]
        case .join: return ["pthread_join", "pthread_timedjoin_np", "pthread_clockjoin_np", "thrd_join"]
        case .semaphoreWait: return ["sem_wait", "sem_timedwait", "sem_clockwait"]
        case .conditionWait: return ["pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "cnd_wait", "cnd_timedwait"]
        case .barrierWait: return ["pthread_barrier_wait"]
        case .dispatchWait: return []
        }
    }

    /// The first (innermost) of `functionStarts` (a stack's frames, as the starts of their
    /// functions; nil where unknown) that is one of `known`'s: the wait the stack is in.
    static func innermost(in functionStarts: [UInt?], known: [UInt: WaitFunction]) -> WaitFunction? {
        for start in functionStarts {
            if let start, let function = known[start] { return function }
        }
        return nil
    }
}
