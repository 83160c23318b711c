/// What a thread blocked in an I/O system call or a sleep waits on, decided from the call's number
/// and arguments (`/proc/self/task/<tid>/syscall`): a descriptor, an array of them, or a time. A
/// pure decision, tested as a table; naming the objects is `DescriptorNaming`'s.
enum IOCall: Equatable, Sendable {
    /// A call on one descriptor: `read`, `recvfrom`, `connect`, `accept`, `fsync`, ...
    case descriptor(Int32, IODirection)
    /// `poll`/`ppoll`: the address of the `pollfd` array and its length.
    case pollArray(address: UInt, count: Int)
    /// `select`/`pselect6`: the highest descriptor plus one and the three sets' addresses.
    case select(count: Int, read: UInt, write: UInt, except: UInt)
    /// `epoll_wait` and its kin: the epoll instance (its set is in `/proc/self/fdinfo/<fd>`).
    case epoll(Int32)
    /// `nanosleep`/`clock_nanosleep`: the clock, whether the time is absolute (`TIMER_ABSTIME`),
    /// the address of the `timespec` asked for.
    case sleep(clock: Int32, absolute: Bool, request: UInt)

    /// Which way a call on a descriptor moves data: what the other end must do to end the wait.
    enum IODirection: String, Sendable {
        /// The other end must write (or the peer send, accept, ...).
        case read
        /// The other end must read (a full pipe, a full socket buffer).
        case write
        /// A connection being made (`connect`): the other end must answer.
        case connect
        /// A listening socket waiting for a client (`accept`).
        case accept
        /// The file system must finish (`fsync`, `fdatasync`).
        case sync
    }

    /// The descriptors a `poll`/`select`/`epoll` wait names first in a report.
    static let maxDescriptors = 16

    #if arch(x86_64)
    static let reads: Set = [0, 17, 19, 45, 47, 295, 299], writes: Set = [1, 18, 20, 44, 46, 296, 307, 40]
    static let connect = 42, accepts: Set = [43, 288], syncs: Set = [74, 75]
    static let pollCall = 7, ppoll = 271, selectCall = 23, pselect6 = 270, epollWaits: Set = [232, 281, 441]
    static let nanosleep = 35, clockNanosleep = 230
    #elseif arch(arm64)
    static let reads: Set = [63, 65, 67, 207, 212, 243], writes: Set = [64, 66, 68, 206, 211, 269, 71]
    static let connect = 203, accepts: Set = [202, 242], syncs: Set = [82, 83]
    static let pollCall = -1, ppoll = 73, selectCall = -1, pselect6 = 72, epollWaits: Set = [22, 441]
    static let nanosleep = 101, clockNanosleep = 115
    #else
    static let reads: Set<Int> = [], writes: Set<Int> = []
    static let connect = -1, accepts: Set<Int> = [], syncs: Set<Int> = []
    static let pollCall = -1, ppoll = -1, selectCall = -1, pselect6 = -1, epollWaits: Set<Int> = []
    static let nanosleep = -1, clockNanosleep = -1
    #endif
    static let timerAbsoluteTime: UInt = 1  // TIMER_ABSTIME
    static let monotonicClock: Int32 = 1

    /// The I/O wait a thread blocked in system call `number` with `arguments` is in; nil when the
    /// call is none of these (a futex, a lock: `WaitObject`).
    static func classify(syscall number: Int, arguments: [UInt]) -> IOCall? {
        guard arguments.count >= 4 else { return nil }
        let first = Int32(truncatingIfNeeded: arguments[0])
        switch number {
        case _ where reads.contains(number): return .descriptor(first, .read)
        case _ where writes.contains(number):
            // sendfile(out, in, ...): the wait is on the descriptor written to.
            return .descriptor(first, .write)
        case connect: return .descriptor(first, .connect)
        case _ where accepts.contains(number): return .descriptor(first, .accept)
        case _ where syncs.contains(number): return .descriptor(first, .sync)
        case pollCall, ppoll:
            return .pollArray(address: arguments[0], count: Int(truncatingIfNeeded: min(arguments[1], 1 << 20)))
        case selectCall, pselect6:
            return .select(count: Int(truncatingIfNeeded: min(arguments[0], 1024)), read: arguments[1], write: arguments[2], except: arguments[3])
        case _ where epollWaits.contains(number): return .epoll(first)
        case nanosleep: return .sleep(clock: monotonicClock, absolute: false, request: arguments[0])
        case clockNanosleep:
            return .sleep(clock: first, absolute: arguments[1] & timerAbsoluteTime != 0, request: arguments[2])
        default: return nil
        }
    }

    /// The descriptors a `pollfd` array names, with the events asked (`in`, `out`), in order.
    static func pollDescriptors(_ entries: [(descriptor: Int32, events: Int16)]) -> [(Int32, String)] {
        entries.filter { $0.descriptor >= 0 }.map { entry in
            var events: [String] = []
            if entry.events & 0x1 != 0 { events.append("in") }  // POLLIN
            if entry.events & 0x2 != 0 { events.append("pri") }  // POLLPRI
            if entry.events & 0x4 != 0 { events.append("out") }  // POLLOUT
            return (entry.descriptor, events.joined(separator: ","))
        }
    }

    /// The descriptors set in a `select` set (`fd_set` words, 64 bits each on Linux).
    static func selectDescriptors(_ words: [UInt64], count: Int) -> [Int32] {
        (0..<min(count, words.count * 64)).filter { words[$0 / 64] & (1 << UInt64($0 % 64)) != 0 }.map(Int32.init)
    }

    /// The descriptors of an epoll set, from `/proc/self/fdinfo/<epfd>` (`tfd: 7 events: 19 ...`),
    /// with the events asked.
    static func epollDescriptors(fdinfo: String) -> [(Int32, String)] {
        fdinfo.split(separator: "\n").compactMap { line -> (Int32, String)? in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 4, fields[0] == "tfd:", let descriptor = Int32(fields[1]), fields[2] == "events:",
                let mask = UInt32(fields[3], radix: 16)
            else { return nil }
            var events: [String] = []
            if mask & 0x1 != 0 { events.append("in") }
            if mask & 0x4 != 0 { events.append("out") }
            return (descriptor, events.joined(separator: ","))
        }
    }
}
