/// Names of the system calls a hung thread is most often blocked in.
enum SyscallNames {
    static func name(_ number: Int) -> String {
        table[number] ?? "syscall \(number)"
    }

    #if arch(x86_64)
    private static let table: [Int: String] = [
        0: "read", 1: "write", 3: "close", 7: "poll", 16: "ioctl", 17: "pread64", 18: "pwrite64", 19: "readv",
        20: "writev", 23: "select", 24: "sched_yield", 34: "pause", 35: "nanosleep", 42: "connect", 43: "accept",
        44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 61: "wait4", 72: "fcntl", 73: "flock",
        74: "fsync", 75: "fdatasync", 87: "unlink", 89: "readlink", 128: "rt_sigtimedwait", 130: "rt_sigsuspend",
        202: "futex", 213: "epoll_create", 230: "clock_nanosleep", 232: "epoll_wait", 247: "waitid", 257: "openat",
        270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 288: "accept4", 295: "preadv", 296: "pwritev",
        299: "recvmmsg", 307: "sendmmsg", 425: "io_uring_setup", 426: "io_uring_enter", 441: "epoll_pwait2",
        449: "futex_waitv", 455: "futex_wait",
    ]
    #elseif arch(arm64)
    private static let table: [Int: String] = [
        22: "epoll_pwait", 25: "fcntl", 29: "ioctl", 32: "flock", 35: "unlinkat", 56: "openat", 57: "close",
        63: "read", 64: "write", 65: "readv", 66: "writev", 67: "pread64", 68: "pwrite64", 72: "pselect6",
        73: "ppoll", 82: "fsync", 83: "fdatasync", 98: "futex", 101: "nanosleep", 115: "clock_nanosleep",
        124: "sched_yield", 133: "rt_sigsuspend", 137: "rt_sigtimedwait", 202: "accept", 203: "connect",
        206: "sendto", 207: "recvfrom", 211: "sendmsg", 212: "recvmsg", 242: "accept4", 243: "recvmmsg",
        260: "wait4", 269: "sendmmsg", 426: "io_uring_enter", 441: "epoll_pwait2", 449: "futex_waitv",
    ]
    #else
    private static let table: [Int: String] = [:]
    #endif
}

extension SyscallNames {
    /// Waits on an epoll instance whose first argument is the instance: where an event loop
    /// (SwiftNIO's, CoreFoundation's) sleeps between iterations.
    static func isEpollWait(_ number: Int) -> Bool {
        #if arch(x86_64)
        return number == 232 || number == 281 || number == 441
        #elseif arch(arm64)
        return number == 22 || number == 441
        #else
        return false
        #endif
    }
}

/// The numbers of the system calls a thread waits on an object in (`WaitObject`).
enum Syscalls {
    #if arch(x86_64)
    static let futex = 202, wait4 = 61, waitid = 247, flock = 73, fcntl = 72
    #elseif arch(arm64)
    static let futex = 98, wait4 = 260, waitid = 95, flock = 32, fcntl = 25
    #else
    static let futex = -1, wait4 = -1, waitid = -1, flock = -1, fcntl = -1
    #endif
}
