import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The other end of a UNIX socket, asked of the kernel (`sock_diag` netlink, `UNIX_DIAG_PEER`,
/// the way `ss -x` finds it): `/proc/net/unix` names a socket's path but not its peer. No privilege
/// is needed; a kernel without the module answers nothing and the peer stays unnamed.
enum UnixSocketPeers {
    struct Answer: Equatable {
        /// The peer socket's inode (0: not connected).
        var peer: UInt64
        /// The socket's own bound name (`@name` for an abstract one); nil when unbound.
        var name: String?
    }

    // <linux/netlink.h>, <linux/sock_diag.h>, <linux/unix_diag.h>
    static let netlinkSockDiag: Int32 = 4, sockDiagByFamily: UInt16 = 20, requestFlag: UInt16 = 1
    static let showName: UInt32 = 0x1, showPeer: UInt32 = 0x4
    static let attributeName: UInt16 = 0, attributePeer: UInt16 = 2
    static let messageError: UInt16 = 2

    /// Asks for socket `inode`'s name and peer; nil when the kernel does not answer.
    static func ask(inode: UInt64) -> Answer? {
        let descriptor = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), netlinkSockDiag)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = requestBytes(inode: inode)
        let sent = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else { return nil }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return parse(Array(buffer[0..<count]), inode: inode)
    }

    /// A `SOCK_DIAG_BY_FAMILY` request for one UNIX socket: `nlmsghdr` then `unix_diag_req`.
    static func requestBytes(inode: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        append(UInt32(16 + 24))  // nlmsg_len
        append(sockDiagByFamily)  // nlmsg_type
        append(requestFlag)  // nlmsg_flags: NLM_F_REQUEST (one socket, no dump)
        append(UInt32(1))  // nlmsg_seq
        append(UInt32(0))  // nlmsg_pid
        append(UInt8(AF_UNIX))  // sdiag_family
        append(UInt8(0))  // sdiag_protocol
        append(UInt16(0))  // pad
        append(UInt32.max)  // udiag_states: any
        append(UInt32(truncatingIfNeeded: inode))  // udiag_ino
        append(showName | showPeer)  // udiag_show
        append(UInt32.max)  // udiag_cookie: INET_DIAG_NOCOOKIE, twice
        append(UInt32.max)
        return bytes
    }

    /// The answer to `requestBytes`: `nlmsghdr`, `unix_diag_msg` (16 bytes), then attributes.
    static func parse(_ bytes: [UInt8], inode: UInt64) -> Answer? {
        func u16(_ at: Int) -> UInt16? {
            at + 2 <= bytes.count ? UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 : nil
        }
        func u32(_ at: Int) -> UInt32? {
            guard at + 4 <= bytes.count else { return nil }
            return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) }
        }
        guard let length = u32(0), let type = u16(4), type != messageError, type == sockDiagByFamily,
            Int(length) <= bytes.count, Int(length) >= 32, u32(20) == UInt32(truncatingIfNeeded: inode)
        else { return nil }
        var answer = Answer(peer: 0, name: nil)
        var offset = 32
        while offset + 4 <= Int(length) {
            guard let attributeLength = u16(offset).map(Int.init), let attributeType = u16(offset + 2), attributeLength >= 4,
                offset + attributeLength <= Int(length)
            else { break }
            let payload = Array(bytes[(offset + 4)..<(offset + attributeLength)])
            switch attributeType {
            case attributePeer:
                answer.peer = u32(offset + 4).map(UInt64.init) ?? 0
            case attributeName where !payload.isEmpty:
                // An abstract name starts with a NUL byte; `ss` and /proc/net/unix write it `@`.
                answer.name = payload[0] == 0
                    ? "@" + String(decoding: payload.dropFirst(), as: UTF8.self)
                    : String(decoding: payload.prefix { $0 != 0 }, as: UTF8.self)
            default:
                break
            }
            offset += (attributeLength + 3) & ~3
        }
        return answer
    }
}
