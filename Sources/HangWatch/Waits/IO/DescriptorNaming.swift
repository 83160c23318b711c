import Foundation

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

/// Names descriptors of this process from `/proc`: `/proc/self/fd` (what it is), `/proc/net` (a
/// socket's addresses, state and queues, and the socket at the other end when it is on this
/// host), `sock_diag` (a UNIX socket's peer), `/proc/*/fd` (which processes hold the other end,
/// those this process may look at), `/proc/self/mountinfo` (a file's file system). Nothing is
/// stopped or signalled.
///
/// The host-wide scans (`/proc/net`, every process's descriptors) are bounded, and their results
/// kept for a second: a hang is sampled every few milliseconds, the other end rarely changes.
/// Used by the watchdog's thread only.
final class DescriptorNaming {
    /// How many processes the owner scan reads, and how many holders it keeps.
    static let maxProcesses = 4096, maxHolders = 8
    /// The most of a `/proc/net` table read.
    static let tableLimit = 16 << 20
    /// How long a scan's answer is kept, microseconds.
    static let keepMicroseconds: UInt64 = 1_000_000

    private var holdersKept: [String: (microseconds: UInt64, holders: [(pid: Int32, descriptor: Int32, flags: Int)])] = [:]
    private var tablesKept: [String: (microseconds: UInt64, text: String)] = [:]
    private let now: () -> UInt64

    init(now: @escaping () -> UInt64) {
        self.now = now
    }

    /// Descriptor `descriptor` of this process, named; `waiter` is the thread waiting on it (never
    /// its own other end), `direction` which way it waits (a read wants a writer).
    func name(_ descriptor: Int32, waiter: Int32, direction: IOCall.IODirection?) -> EndpointLook {
        var look = EndpointLook(descriptor: descriptor, type: "other")
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)") else {
            look.peerNote = "the descriptor is closed"
            return look
        }
        if let inode = Self.inode(target, kind: "socket") {
            nameSocket(inode, into: &look, waiter: waiter)
        } else if let inode = Self.inode(target, kind: "pipe") {
            look.type = "pipe"
            look.peers = otherEnd(of: "pipe:[\(inode)]", ownDescriptor: descriptor, waiter: waiter, direction: direction)
            if look.peers.isEmpty { look.peerNote = "no process this one may look at holds the other end" }
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

    private func nameSocket(_ inode: UInt64, into look: inout EndpointLook, waiter: Int32) {
        for (table, type) in [("tcp", "tcp"), ("tcp6", "tcp"), ("udp", "udp"), ("udp6", "udp")] {
            let rows = ProcNetTables.inetSockets(self.table(table))
            guard let row = rows.first(where: { $0.inode == inode }) else { continue }
            look.type = type
            look.local = row.local
            look.state = type == "tcp" ? ProcNetTables.tcpState(row.stateCode) : ProcNetTables.udpState(row.stateCode)
            look.receiveQueue = row.receiveQueue
            look.sendQueue = row.sendQueue
            let unconnected = row.remote.hasSuffix(":0") && (row.remote.hasPrefix("0.0.0.0") || row.remote.hasPrefix("[::]"))
            if !unconnected { look.remote = row.remote }
            if row.stateCode == 0x0A || unconnected {
                look.peerNote = type == "tcp" ? "a listening socket: the other end is any client" : "not connected: any sender"
                return
            }
            // On this host when a socket of the same namespace has the two addresses swapped; a
            // connect still waiting meets the listener instead.
            let everyRow = [table, table.hasSuffix("6") ? String(table.dropLast()) : table + "6"].flatMap { ProcNetTables.inetSockets(self.table($0)) }
            let peer = everyRow.first { $0.local == row.remote && $0.remote == row.local && $0.inode != 0 }
                ?? everyRow.first { $0.stateCode == 0x0A && $0.localPort == Self.port(row.remote) && Self.listens($0.local, for: row.remote) }
            guard let peer else {
                look.peerNote = "the other end, \(row.remote), is not on this host"
                return
            }
            look.peers = holders(of: "socket:[\(peer.inode)]", waiter: waiter, ownDescriptor: look.descriptor)
            if look.peers.isEmpty { look.peerNote = "on this host, held by a process this one may not look at" }
            return
        }
        let unix = ProcNetTables.unixSockets(table("unix"))
        if let row = unix.first(where: { $0.inode == inode }) {
            look.type = "unix"
            look.state = row.listening ? "LISTEN" : nil
            let answer = UnixSocketPeers.ask(inode: inode)
            look.local = row.path ?? answer?.name
            guard !row.listening else {
                look.peerNote = "a listening socket: the other end is any client"
                return
            }
            guard let peer = answer?.peer, peer != 0 else {
                look.peerNote = answer == nil ? "the kernel did not name the peer (sock_diag)" : "not connected"
                return
            }
            look.remote = unix.first { $0.inode == peer }?.path
            look.peers = holders(of: "socket:[\(peer)]", waiter: waiter, ownDescriptor: look.descriptor)
            if look.peers.isEmpty { look.peerNote = "held by a process this one may not look at" }
            return
        }
        look.type = "socket"
        look.peerNote = "a socket of another family (netlink, packet, ...)"
    }

    static func port(_ address: String) -> String? { address.split(separator: ":").last.map(String.init) }

    /// Whether a listener bound to `local` takes connections to `address` (same address, or a
    /// wildcard one).
    static func listens(_ local: String, for address: String) -> Bool {
        let host = { (text: String) in String(text[..<(text.lastIndex(of: ":") ?? text.endIndex)]) }
        return ["0.0.0.0", "[::]"].contains(host(local)) || host(local) == host(address)
    }

    // MARK: Pipes and files

    private func nameFile(_ path: String, descriptor: Int32, waiter: Int32, direction: IOCall.IODirection?, into look: inout EndpointLook) {
        look.path = path
        var info = stat()
        if stat("/proc/self/fd/\(descriptor)", &info) == 0, info.st_mode & S_IFMT == S_IFIFO {
            look.type = "fifo"
            look.peers = otherEnd(of: path, ownDescriptor: descriptor, waiter: waiter, direction: direction)
            if look.peers.isEmpty { look.peerNote = "no process this one may look at holds the other end" }
            return
        }
        look.type = "file"
        if let fdinfo = SmallFile.text("/proc/self/fdinfo/\(descriptor)"), let id = ProcNetTables.fdinfoField("mnt_id", in: fdinfo).flatMap({ Int($0) }),
            let mount = ProcNetTables.mounts(SmallFile.text("/proc/self/mountinfo", limit: 4 << 20) ?? "").first(where: { $0.id == id })
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

    /// The holders of a socket (the peer's): any descriptor naming it.
    private func holders(of target: String, waiter: Int32, ownDescriptor: Int32) -> [WaitOwner] {
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
    private func scan(_ target: String) -> [(pid: Int32, descriptor: Int32, flags: Int)] {
        let time = now()
        if let kept = holdersKept[target], time - min(time, kept.microseconds) < Self.keepMicroseconds { return kept.holders }
        var found: [(pid: Int32, descriptor: Int32, flags: Int)] = []
        let own = getpid()
        let others = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }.filter { $0 != own }
        for pid in [own] + others.sorted().prefix(Self.maxProcesses) {
            let directory = "/proc/\(pid)/fd"
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            for entry in entries {
                guard let descriptor = Int32(entry),
                    (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(entry)")) == target
                else { continue }
                let flags = SmallFile.text("/proc/\(pid)/fdinfo/\(descriptor)").flatMap { ProcNetTables.fdinfoField("flags", in: $0) }
                    .flatMap { Int($0, radix: 8) } ?? Int(O_RDWR)
                found.append((pid, descriptor, flags))
            }
            if found.count >= Self.maxHolders * 2 { break }
        }
        holdersKept = holdersKept.filter { time - min(time, $0.value.microseconds) < Self.keepMicroseconds }
        holdersKept[target] = (time, found)
        return found
    }

    /// A `/proc/net` table (this process's network namespace), kept a second.
    private func table(_ name: String) -> String {
        let time = now()
        if let kept = tablesKept[name], time - min(time, kept.microseconds) < Self.keepMicroseconds { return kept.text }
        let text = SmallFile.text("/proc/self/net/\(name)", limit: Self.tableLimit) ?? ""
        tablesKept[name] = (time, text)
        return text
    }
}
