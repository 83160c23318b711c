import Foundation
@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// One descriptor a blocked thread waits on, named: what it is (a TCP or UDP socket with both
/// addresses, a UNIX socket's path, a pipe, a file with its file system), and who is at the other
/// end when that is on this host.
struct EndpointLook: Equatable, Sendable {
    var descriptor: Int32
    /// `tcp`, `udp`, `unix`, `socket` (another family), `pipe`, `fifo`, `file`, `eventfd`, `epoll`,
    /// `timerfd`, `signalfd`, `other`.
    var type: String
    /// What a multiplexed wait asked for on it (`in`, `out`).
    var events: String?
    var local: String?
    var remote: String?
    var state: String?
    var receiveQueue: Int?
    var sendQueue: Int?
    var path: String?
    var filesystem: String?
    var device: String?
    var mountPoint: String?
    /// Who holds the other end (the process, or the thread of this process in a call on it).
    var peers: [WaitOwner] = []
    /// Each peer looked at (name, state, call; a thread's stack), in `peers`' order.
    var peerLooks: [HolderLook] = []
    /// Why the other end is not named, when it is not.
    var peerNote: String?
}

/// Names descriptors of this process: `/proc/self/fd` says what each is; a socket is asked
/// itself (its addresses, state and queues) and the kernel finds the socket at the other end
/// (`SocketDiagnostics`: an exact lookup, no table walked); `/proc/*/fd` says which processes hold
/// that end or a pipe's (those this process may look at); `/proc/self/mountinfo` a file's file
/// system. Nothing is stopped or signalled.
///
/// The scan of every process's descriptors is bounded, and its answer kept for a second: a hang is
/// sampled every few milliseconds, and the other end rarely changes. Used by the watchdog's thread
/// only.
final class DescriptorNaming {
    /// How many processes the owner scan reads, and how many holders it keeps.
    static let maxProcesses = 4096, maxHolders = 8
    /// How long a scan's answer is kept, microseconds.
    static let keepMicroseconds: UInt64 = 1_000_000

    /// How long one look of a hang's samples reads descriptors, microseconds: a scan not done by
    /// then goes on at the next.
    static let lookBudgetMicroseconds: UInt64 = 500
    /// A scan's first look may read this many times the budget.
    static let firstPartFactor: UInt64 = 8
    /// This naming's budget per look; nil: none (each scan read whole at once).
    let budgetMicroseconds: UInt64?

    private var holdersKept: [String: (microseconds: UInt64, holders: [(pid: Int32, descriptor: Int32, flags: Int)])] = [:]
    /// Calls this far apart belong to two looks (each look has its own budget), microseconds.
    static let lookGapMicroseconds: UInt64 = 5_000
    /// The budget of the look now: when it began, how much of it scans spent.
    private var budget: (start: UInt64, spent: UInt64) = (0, 0)
    /// Scans not finished, by target, with when each was last advanced (dropped after a second unused).
    private var scans: [String: (scan: DescriptorScan, used: UInt64)] = [:]
    /// The last scan's progress when it stopped for its budget (processes read, of how many).
    private(set) var lastScanUnfinished: (read: Int, of: Int)?
    private let now: () -> UInt64

    /// `spent`: the clock a look's budget is counted on, microseconds: by default the calling
    /// thread's CPU time (what the scan costs; a watchdog preempted on a busy host is not
    /// charged for the time others ran).
    init(
        now: @escaping () -> UInt64, budgetMicroseconds: UInt64? = DescriptorNaming.lookBudgetMicroseconds,
        spent: @escaping () -> UInt64 = DescriptorNaming.threadCPUMicroseconds
    ) {
        self.now = now
        self.budgetMicroseconds = budgetMicroseconds
        self.spent = spent
    }

    private let spent: () -> UInt64

    /// The calling thread's CPU time, microseconds.
    static func threadCPUMicroseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1000
    }

    /// Descriptor `descriptor` of this process, named; `waiter` is the thread waiting on it (never
    /// its own other end), `direction` which way it waits (a read wants a writer).
    /// `connectingTo`: the address a `connect` in progress was given (a socket still connecting
    /// has no peer name yet: `getpeername` fails until the other end answers).
    func name(
        _ descriptor: Int32, waiter: Int32, direction: IOCall.IODirection?, connectingTo: SocketDiagnostics.InetAddress? = nil
    ) -> EndpointLook {
        var look = EndpointLook(descriptor: descriptor, type: "other")
        guard let target = SmallFile.link("/proc/self/fd/\(descriptor)") else {
            look.peerNote = "the descriptor is closed"
            return look
        }
        if let inode = Self.inode(target, kind: "socket") {
            nameSocket(inode, into: &look, waiter: waiter, connectingTo: connectingTo)
        } else if let inode = Self.inode(target, kind: "pipe") {
            look.type = "pipe"
            look.peers = otherEnd(of: "pipe:[\(inode)]", ownDescriptor: descriptor, waiter: waiter, direction: direction)
            if look.peers.isEmpty { look.peerNote = unfoundNote("no process this one may look at holds the other end") }
        } else if target.hasPrefix("anon_inode:") {
            let kind = target.dropFirst("anon_inode:".count).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            look.type = ["eventfd", "eventpoll", "timerfd", "signalfd"].contains(kind) ? (kind == "eventpoll" ? "epoll" : kind) : "other"
            look.path = target
            look.peerNote = "an \(kind) has no other end"
        } else if target.hasPrefix("/") {
            nameFile(target, descriptor: descriptor, waiter: waiter, direction: direction, into: &look)
        } else {
            look.path = target
        }
        return look
    }

    /// `socket:[123]` → 123.
    static func inode(_ target: String, kind: String) -> UInt64? {
        guard target.hasPrefix(kind + ":["), target.hasSuffix("]") else { return nil }
        return UInt64(target.dropFirst(kind.count + 2).dropLast())
    }

    // MARK: Sockets

    /// A socket of this process: what it is, its addresses, state and queues are asked of the
    /// descriptor itself (`getsockname`, `getpeername`, `TCP_INFO`, `SIOCINQ`/`SIOCOUTQ`); the
    /// other end of the kernel (`SocketDiagnostics`).
    private func nameSocket(_ inode: UInt64, into look: inout EndpointLook, waiter: Int32, connectingTo: SocketDiagnostics.InetAddress?) {
        let descriptor = look.descriptor
        let family = Self.option(descriptor, SOL_SOCKET, SO_DOMAIN)
        let proto = Self.option(descriptor, SOL_SOCKET, SO_PROTOCOL)
        switch family {
        case AF_INET, AF_INET6:
            guard proto == Int32(IPPROTO_TCP) || proto == Int32(IPPROTO_UDP) else {
                look.type = "socket"
                look.peerNote = "an IP socket of protocol \(proto ?? -1)"
                return
            }
            let tcp = proto == Int32(IPPROTO_TCP)
            look.type = tcp ? "tcp" : "udp"
            let local = Self.inetAddress(descriptor, getsockname)
            let remote = Self.inetAddress(descriptor, getpeername) ?? connectingTo
            look.local = local?.text
            look.remote = remote?.text
            look.receiveQueue = Self.queued(descriptor, request: 0x541B)  // SIOCINQ
            look.sendQueue = Self.queued(descriptor, request: 0x5411)  // SIOCOUTQ
            var state: UInt8?
            if tcp {
                var info = [UInt8](repeating: 0, count: 8)
                var length = socklen_t(info.count)
                if getsockopt(descriptor, Int32(IPPROTO_TCP), 11 /* TCP_INFO */, &info, &length) == 0, length >= 1 { state = info[0] }
                look.state = state.map(EndpointText.tcpState)
            } else {
                look.state = remote == nil ? "UNCONN" : "ESTABLISHED"
            }
            if state == SocketDiagnostics.listenState {
                look.peerNote = "a listening socket: the other end is any client"
                return
            }
            guard let local, let remote else {
                look.peerNote = tcp ? "not connected" : "not connected: any sender"
                return
            }
            // The socket a packet from here to the remote address reaches: the other end, when it
            // is on this host (or the listener a connect waits for).
            guard let peer = SocketDiagnostics.inetSocket(from: local, to: remote, protocol: tcp ? 6 : 17), peer.inode != 0,
                peer.inode != inode
            else {
                look.peerNote = "the other end, \(remote.text), is not on this host"
                return
            }
            look.peers = holders(of: "socket:[\(peer.inode)]", waiter: waiter)
            if look.peers.isEmpty { look.peerNote = unfoundNote("on this host, held by a process this one may not look at") }
        case AF_UNIX:
            look.type = "unix"
            look.local = Self.unixPath(descriptor, getsockname)
            look.remote = Self.unixPath(descriptor, getpeername)
            guard let answer = SocketDiagnostics.unix(inode: inode) else {
                look.peerNote = "the kernel did not name the peer (sock_diag)"
                return
            }
            if answer.listening {
                look.state = "LISTEN"
                look.peerNote = "a listening socket: the other end is any client"
                return
            }
            guard answer.peer != 0 else {
                look.peerNote = "not connected"
                return
            }
            look.peers = holders(of: "socket:[\(answer.peer)]", waiter: waiter)
            if look.peers.isEmpty { look.peerNote = unfoundNote("held by a process this one may not look at") }
        default:
            look.type = "socket"
            look.peerNote = "a socket of another family (netlink, packet, ...)"
        }
    }

    /// An integer socket option, nil when it cannot be read.
    static func option(_ descriptor: Int32, _ level: Int32, _ name: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(descriptor, level, name, &value, &length) == 0 ? value : nil
    }

    /// Bytes queued on a socket (`SIOCINQ`, `SIOCOUTQ`); nil where it does not apply (a listener).
    static func queued(_ descriptor: Int32, request: UInt) -> Int? {
        var count: Int32 = 0
        return ioctl(descriptor, request, &count) == 0 ? Int(count) : nil
    }

    typealias NameCall = (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?) -> Int32

    /// A socket's own (`getsockname`) or peer (`getpeername`) IP address; nil when it has none.
    static func inetAddress(_ descriptor: Int32, _ call: NameCall) -> SocketDiagnostics.InetAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let done = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(descriptor, $0, &length) } }
        guard done == 0 else { return nil }
        return withUnsafeBytes(of: &storage) { inetAddress(sockaddr: $0) }
    }

    /// The IPv4 or IPv6 address a `sockaddr`'s bytes hold (the unspecified address and port 0:
    /// none); nil for another family or too few bytes.
    static func inetAddress(sockaddr raw: UnsafeRawBufferPointer) -> SocketDiagnostics.InetAddress? {
        guard raw.count >= MemoryLayout<sa_family_t>.size else { return nil }
        switch Int32(raw.loadUnaligned(as: sa_family_t.self)) {
            case AF_INET:
                guard raw.count >= MemoryLayout<sockaddr_in>.size else { return nil }
                let address = raw.loadUnaligned(as: sockaddr_in.self)
                let port = UInt16(bigEndian: address.sin_port)
                let bytes = withUnsafeBytes(of: address.sin_addr) { Array($0) }
                return bytes == [0, 0, 0, 0] && port == 0 ? nil : .init(bytes: bytes, port: port)
            case AF_INET6:
                guard raw.count >= MemoryLayout<sockaddr_in6>.size else { return nil }
                let address = raw.loadUnaligned(as: sockaddr_in6.self)
                let port = UInt16(bigEndian: address.sin6_port)
                let bytes = withUnsafeBytes(of: address.sin6_addr) { Array($0) }
                return bytes.allSatisfy { $0 == 0 } && port == 0 ? nil : .init(bytes: bytes, port: port)
            default:
                return nil
        }
    }

    /// A UNIX socket's own or peer path (`@name` for an abstract one); nil when unbound.
    static func unixPath(_ descriptor: Int32, _ call: NameCall) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let done = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(descriptor, $0, &length) } }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        guard done == 0, Int(length) > pathOffset else { return nil }
        let bytes = withUnsafeBytes(of: address.sun_path) { Array($0.prefix(Int(length) - pathOffset)) }
        guard let first = bytes.first else { return nil }
        if first == 0 { return "@" + String(decoding: bytes.dropFirst().prefix { $0 != 0 }, as: UTF8.self) }
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    // MARK: Pipes and files

    private func nameFile(_ path: String, descriptor: Int32, waiter: Int32, direction: IOCall.IODirection?, into look: inout EndpointLook) {
        look.path = path
        var info = stat()
        if stat("/proc/self/fd/\(descriptor)", &info) == 0, info.st_mode & S_IFMT == S_IFIFO {
            look.type = "fifo"
            look.peers = otherEnd(of: path, ownDescriptor: descriptor, waiter: waiter, direction: direction)
            if look.peers.isEmpty { look.peerNote = unfoundNote("no process this one may look at holds the other end") }
            return
        }
        look.type = "file"
        if let fdinfo = SmallFile.text("/proc/self/fdinfo/\(descriptor)"), let id = EndpointText.fdinfoField("mnt_id", in: fdinfo).flatMap({ Int($0) }),
            let mount = EndpointText.mounts(SmallFile.text("/proc/self/mountinfo", limit: 4 << 20) ?? "").first(where: { $0.id == id })
        {
            look.filesystem = mount.filesystem
            look.device = mount.device
            look.mountPoint = mount.mountPoint
        }
        look.peerNote = "a file has no other end: the file system must finish the call"
    }

    /// The holders of the other end of a pipe or FIFO: for a read, those that may write (opened
    /// for writing); for a write, those that may read. The waiter's own descriptor is not one.
    private func otherEnd(of target: String, ownDescriptor: Int32, waiter: Int32, direction: IOCall.IODirection?) -> [WaitOwner] {
        let writing = direction == .write
        let found = scan(target).filter { holder in
            guard !(holder.pid == getpid() && holder.descriptor == ownDescriptor) else { return false }
            let access = holder.flags & Int(O_ACCMODE)
            return access == Int(O_RDWR) || access == (writing ? Int(O_RDONLY) : Int(O_WRONLY))
        }
        return owners(found, waiter: waiter)
    }

    /// Why no holder is named: `otherwise`, or, while the scan is not done, how far it got.
    private func unfoundNote(_ otherwise: String) -> String {
        guard let unfinished = lastScanUnfinished else { return otherwise }
        return "its holder not found yet: \(unfinished.read) of \(unfinished.of) processes' descriptors read (the scan goes on at the next look)"
    }

    /// The holders of a socket (the peer's): any descriptor naming it.
    private func holders(of target: String, waiter: Int32) -> [WaitOwner] {
        owners(scan(target), waiter: waiter)
    }

    /// Each holding process once; this process as the thread in a call on that descriptor when one
    /// is (its stack is then taken as a lock holder's), else as the process.
    private func owners(_ found: [(pid: Int32, descriptor: Int32, flags: Int)], waiter: Int32) -> [WaitOwner] {
        var owners: [WaitOwner] = []
        for holder in found {
            if holder.pid == getpid() {
                let thread = Self.threadInCall(on: holder.descriptor, except: waiter)
                let owner = thread.map(WaitOwner.thread) ?? .process(holder.pid)
                if !owners.contains(owner) { owners.append(owner) }
            } else if !owners.contains(.process(holder.pid)) {
                owners.append(.process(holder.pid))
            }
        }
        return Array(owners.prefix(Self.maxHolders))
    }

    /// A thread of this process (not `except`) blocked in a call on `descriptor`.
    static func threadInCall(on descriptor: Int32, except: Int32) -> Int32? {
        for tid in ProcessThreadList.current() where tid != except {
            guard case .inSyscall(let number, let arguments, _, _)? = ProcTask(tid: tid).syscall(),
                case .descriptor(let target, _)? = IOCall.classify(syscall: number, arguments: arguments), target == descriptor
            else { continue }
            return tid
        }
        return nil
    }

    /// Every descriptor naming `target` (`socket:[n]`, `pipe:[n]`, a FIFO's path) in this process
    /// and the others this one may read, with its open flags; this process first. Kept a second.
    ///
    /// A look reads descriptors for at most `budgetMicroseconds` (a host with ten thousand sockets
    /// held by one process took 64 ms in one go, on the watchdog's thread): a scan not finished
    /// goes on where it stopped at the next look, and until it is done the look has the holders
    /// found so far, or the last finished scan's (`scanning` says how far it got).
    private func scan(_ target: String) -> [(pid: Int32, descriptor: Int32, flags: Int)] {
        let time = now()
        lastScanUnfinished = nil
        if let kept = holdersKept[target], time - min(time, kept.microseconds) < Self.keepMicroseconds { return kept.holders }
        // One budget for every scan of a look (a poll's descriptors each have theirs to find):
        // calls further apart than `lookGapMicroseconds` are another look's.
        if time - min(time, budget.start) >= Self.lookGapMicroseconds { budget = (time, 0) }
        let resumed = scans[target]?.scan
        // A scan's first part is larger: on most hosts the whole scan, so the hang's first look
        // names the other end; only a crowded host's goes on over later looks.
        let allowed = budgetMicroseconds.map { resumed == nil ? $0 * Self.firstPartFactor : $0 } ?? .max
        let remaining = allowed - min(allowed, budget.spent)
        let progress = resumed ?? DescriptorScan(target: target, own: getpid())
        let began = spent()
        let finished = progress.advance(
            until: { let at = self.spent(); return at - min(at, began) >= remaining }, maxFound: Self.maxHolders * 2)
        let after = spent()
        budget.spent += after - min(after, began)
        guard finished else {
            scans = scans.filter { time - min(time, $0.value.used) < Self.keepMicroseconds }
            scans[target] = (progress, time)
            lastScanUnfinished = (progress.processesRead, progress.processCount)
            return progress.found.isEmpty ? holdersKept[target]?.holders ?? [] : progress.found
        }
        scans[target] = nil
        holdersKept = holdersKept.filter { time - min(time, $0.value.microseconds) < Self.keepMicroseconds }
        holdersKept[target] = (time, progress.found)
        return progress.found
    }
}

/// One scan of every process's descriptors for the ones naming `target`, read a part at a time:
/// `advance` reads until told to stop and says whether it is done; the next call goes on at the
/// process and the entry where it stopped (the process's descriptor directory kept open between
/// the two: listing it again would cost as much as reading it). One buffer, no string made per
/// descriptor.
final class DescriptorScan {
    let target: [UInt8]
    private(set) var found: [(pid: Int32, descriptor: Int32, flags: Int)] = []
    private let pids: [Int32]
    private var index = 0
    /// `pids[index]`'s descriptor directory, while it is being read.
    private var directory: OpaquePointer?
    private var link = [UInt8](repeating: 0, count: 256)

    var processCount: Int { pids.count }
    var processesRead: Int { index }

    /// This process first, then the others with the fewest descriptors first where the kernel
    /// says how many (the size of `/proc/<pid>/fd`, Linux 6.2 on; else by pid): one process with
    /// ten thousand connections does not hold up the naming of an end most processes hold.
    init(target: String, own: Int32) {
        self.target = Array(target.utf8)
        let others = ((try? DirectoryEntries.names(in: "/proc")) ?? []).compactMap { Int32($0) }.filter { $0 != own }.sorted()
            .prefix(DescriptorNaming.maxProcesses)
        let sized = others.map { pid -> (pid: Int32, count: Int) in
            var info = stat()
            return (pid, stat("/proc/\(pid)/fd", &info) == 0 ? Int(info.st_size) : 0)
        }
        pids = [own] + sized.sorted { ($0.count, $0.pid) < ($1.count, $1.pid) }.map(\.pid)
    }

    deinit {
        if let directory { closedir(directory) }
    }

    /// Reads on until `stop()` (asked every 32 descriptors) or `maxFound` holders; whether the scan is done.
    func advance(until stop: () -> Bool, maxFound: Int) -> Bool {
        var sinceAsked = 0
        while index < pids.count {
            let pid = pids[index]
            if directory == nil { directory = opendir("/proc/\(pid)/fd") }
            if let open = directory {
                while let item = readdir(open) {
                    let name = (UnsafeRawPointer(item) + MemoryLayout<dirent>.offset(of: \.d_name)!).assumingMemoryBound(to: CChar.self)
                    let first = UInt8(bitPattern: name.pointee)
                    guard first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { continue }
                    let length = link.withUnsafeMutableBytes {
                        readlinkat(dirfd(open), name, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count)
                    }
                    if length == target.count, link.prefix(length).elementsEqual(target), let descriptor = Int32(String(cString: name)) {
                        let flags = SmallFile.text("/proc/\(pid)/fdinfo/\(descriptor)").flatMap { EndpointText.fdinfoField("flags", in: $0) }
                            .flatMap { Int($0, radix: 8) } ?? Int(O_RDWR)
                        found.append((pid, descriptor, flags))
                        if found.count >= maxFound { return true }
                    }
                    sinceAsked += 1
                    if sinceAsked >= 32 {
                        sinceAsked = 0
                        if stop() { return false }
                    }
                }
                closedir(open)
                directory = nil
            }
            index += 1
        }
        return true
    }
}
