/// Who holds a lock, from the words of the lock itself: pure decoding of what glibc and the
/// kernel keep there, tested as a table. `isThread` says whether a tid is a thread of this process
/// (a value that is not is never named as a holder).
enum LockOwners {
    /// `FUTEX_TID_MASK`: the owner's tid in a priority-inheritance futex word.
    static let futexTIDMask: UInt32 = 0x3fff_ffff
    /// glibc's `pthread_mutex_t` (x86_64 and aarch64): `__lock` at 0 (the futex word), `__owner`
    /// at 8.
    static let mutexOwnerOffset: UInt = 8
    /// glibc's `pthread_rwlock_t` (2.25 and later): the futex words a waiter sleeps on, and
    /// `__cur_writer` (the write-locking thread's tid) at 24.
    static let rwlockFutexOffsets: [UInt] = [0, 8, 12]  // __readers, __wrphase_futex, __writers_futex
    static let rwlockWriterOffset: UInt = 24

    /// A `pthread_mutex_t`: its lock word and `__owner`.
    static func mutex(lock: UInt32, owner: Int32, isThread: (Int32) -> Bool) -> WaitOwner {
        guard lock != 0 else { return .free }
        guard owner > 0 else { return .unknown("the mutex is locked but names no owner (a process-shared or robust mutex, or one being released)") }
        return isThread(owner) ? .thread(owner) : .unknown("the mutex names tid \(owner), which is no thread of this process (a process-shared mutex?)")
    }

    /// A priority-inheritance futex word (Swift's `Mutex`): the owner's tid, in the low 30 bits.
    static func priorityInheritance(word: UInt32, isThread: (Int32) -> Bool) -> WaitOwner {
        let tid = Int32(word & futexTIDMask)
        guard tid != 0 else { return .free }
        return isThread(tid) ? .thread(tid) : .unknown("the lock names tid \(tid), which is no thread of this process (shared memory?)")
    }

    /// `pthread_join`: the joined thread's tid word (0 once it has exited).
    static func join(word: Int32, isThread: (Int32) -> Bool) -> WaitOwner {
        guard word > 0 else { return .free }
        return isThread(word) ? .thread(word) : .unknown("the joined thread \(word) is no thread of this process")
    }

    /// A `pthread_rwlock_t` waited on at futex word `futex`: `writerAt(offset)` reads `__cur_writer`
    /// for the lock that would start `offset` bytes before the word. The word can be any of three of
    /// the lock's, so each is tried: exactly one must name a thread of this process; none means the
    /// lock is read-locked (readers leave no names) or being released.
    static func rwlock(futex: UInt, writerAt: (UInt) -> Int32?, isThread: (Int32) -> Bool) -> WaitOwner {
        let writers = Set(rwlockFutexOffsets.compactMap { offset -> Int32? in
            guard futex >= offset, let writer = writerAt(futex - offset + rwlockWriterOffset), writer > 0, isThread(writer) else { return nil }
            return writer
        })
        switch writers.count {
        case 1: return .thread(writers.first!)
        case 0: return .unknown("no writer holds the lock: it is read-locked (readers are not recorded) or being released")
        default: return .unknown("the lock's writer could not be told apart from its other words")
        }
    }

    /// One line of `/proc/locks`: `1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF`, or a waiter's
    /// `1: -> FLOCK  ADVISORY  WRITE 1235 08:01:5678 0 EOF`.
    struct FileLock: Equatable, Sendable {
        var pid: Int32
        /// `major:minor:inode`, hexadecimal device numbers as the kernel writes them.
        var file: String
        /// A waiter's line (`->`): it does not hold the lock.
        var waiting: Bool
    }

    static func parseLocks(_ text: String) -> [FileLock] {
        text.split(separator: "\n").compactMap { line -> FileLock? in
            var fields = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst()
            let waiting = fields.first == "->"
            if waiting { fields = fields.dropFirst() }
            let values = Array(fields)
            // kind, ADVISORY/MANDATORY, READ/WRITE, pid, file, start, end
            guard values.count >= 5, let pid = Int32(values[3]), values[4].split(separator: ":").count == 3 else { return nil }
            return FileLock(pid: pid, file: String(values[4]), waiting: waiting)
        }
    }

    /// The holders of the locks on `file` (`major:minor:inode`): the pids of granted locks.
    static func fileLockHolders(_ locks: [FileLock], file: String) -> [Int32] {
        var seen: [Int32] = []
        for lock in locks where !lock.waiting && lock.file == file && !seen.contains(lock.pid) { seen.append(lock.pid) }
        return seen
    }

    /// `file` as `/proc/locks` writes it: `major:minor:inode`, the device numbers in hexadecimal.
    static func fileIdentity(device: UInt64, inode: UInt64) -> String {
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
        let minor = (device & 0xff) | ((device >> 12) & ~0xff)
        func hex2(_ value: UInt64) -> String {
            let text = String(value, radix: 16)
            return text.count < 2 ? "0" + text : text
        }
        return "\(hex2(major)):\(hex2(minor)):\(inode)"
    }
}
