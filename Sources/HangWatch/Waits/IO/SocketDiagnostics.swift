import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Asks the kernel about one socket (`sock_diag` netlink, as `ss` does), never walking a table:
/// - a UNIX socket's peer and bound name (`UNIX_DIAG_PEER`, `UNIX_DIAG_NAME`), which nothing else
///   shows;
/// - the TCP or UDP socket on this host that a packet from one address to another would reach
///   (an exact lookup by both addresses and ports): the other end of a connection, or the listener
///   a connect is waiting for. `/proc/net/tcp` would tell the same by walking every socket of the
///   host, milliseconds to seconds on a busy server, at each look.
/// No privilege is needed; a kernel without the modules answers nothing, and the peer stays unnamed.
enum SocketDiagnostics {
    // <linux/netlink.h>, <linux/sock_diag.h>, <linux/unix_diag.h>, <linux/inet_diag.h>
    static let netlinkSockDiag: Int32 = 4, sockDiagByFamily: UInt16 = 20, requestFlag: UInt16 = 1
    static let messageError: UInt16 = 2
    static let showName: UInt32 = 0x1, showPeer: UInt32 = 0x4
    static let attributeName: UInt16 = 0, attributePeer: UInt16 = 2
    static let listenState: UInt8 = 10  // TCP_LISTEN, also a listening UNIX socket's

    struct UnixAnswer: Equatable {
        /// The peer socket's inode (0: not connected).
        var peer: UInt64
        /// The socket's own bound name (`@name` for an abstract one); nil when unbound.
        var name: String?
        var listening: Bool
    }

    /// An IPv4 or IPv6 address and port, as the kernel holds them (network byte order).
    struct InetAddress: Equatable, Sendable {
        /// 4 or 16 bytes.
        var bytes: [UInt8]
        var port: UInt16

        /// `127.0.0.1:8080`, `[::1]:8080`; an IPv4-mapped IPv6 address as IPv4.
        var text: String {
            if bytes.count == 4 { return "\(bytes.map(String.init).joined(separator: ".")):\(port)" }
            if let mapped = ipv4Mapped { return mapped.text }
            return "[\(EndpointText.ipv6(bytes))]:\(port)"
        }

        var ipv4Mapped: InetAddress? {
            guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff else { return nil }
            return InetAddress(bytes: Array(bytes[12...]), port: port)
        }
    }

    struct InetAnswer: Equatable {
        var state: UInt8
        var inode: UInt64
    }

    /// Socket `inode`'s name, peer and whether it listens; nil when the kernel does not answer.
    static func unix(inode: UInt64) -> UnixAnswer? {
        roundTrip(unixRequest(inode: inode)).flatMap { parseUnix($0, inode: inode) }
    }

    /// The socket a packet from `from` to `to` reaches on this host (`proto` 6 TCP, 17 UDP): the
    /// other end of a connection from `to` to `from`, or a listener on `to`; nil when none.
    static func inetSocket(from: InetAddress, to: InetAddress, protocol proto: UInt8) -> InetAnswer? {
        roundTrip(inetRequest(from: from, to: to, protocol: proto)).flatMap(parseInet)
    }

    static func unixRequest(inode: UInt64) -> [UInt8] {
        var bytes = header(length: 16 + 24)
        bytes += [UInt8(AF_UNIX), 0, 0, 0]  // sdiag_family, sdiag_protocol, pad
        append(UInt32.max, to: &bytes)  // udiag_states: any
        append(UInt32(truncatingIfNeeded: inode), to: &bytes)
        append(showName | showPeer, to: &bytes)
        append(UInt32.max, to: &bytes)  // udiag_cookie: INET_DIAG_NOCOOKIE, twice
        append(UInt32.max, to: &bytes)
        return bytes
    }

    /// `inet_diag_req_v2` naming the socket whose own addresses are `to` (local) and `from`
    /// (remote): the kernel finds it as it would deliver a packet from `from` to `to`.
    static func inetRequest(from: InetAddress, to: InetAddress, protocol proto: UInt8) -> [UInt8] {
        let family: UInt8 = from.bytes.count == 4 && to.bytes.count == 4 ? UInt8(AF_INET) : UInt8(AF_INET6)
        func padded(_ address: InetAddress) -> [UInt8] {
            if family == UInt8(AF_INET) { return address.bytes + [UInt8](repeating: 0, count: 12) }
            return address.bytes.count == 16 ? address.bytes : [UInt8](repeating: 0, count: 10) + [0xff, 0xff] + address.bytes
        }
        var bytes = header(length: 16 + 56)
        bytes += [family, proto, 0, 0]  // sdiag_family, sdiag_protocol, idiag_ext, pad
        append(UInt32.max, to: &bytes)  // idiag_states: any
        bytes += [UInt8(to.port >> 8), UInt8(to.port & 0xff), UInt8(from.port >> 8), UInt8(from.port & 0xff)]  // sport, dport (big-endian)
        bytes += padded(to) + padded(from)  // idiag_src, idiag_dst
        append(UInt32(0), to: &bytes)  // idiag_if
        append(UInt32.max, to: &bytes)  // idiag_cookie: INET_DIAG_NOCOOKIE, twice
        append(UInt32.max, to: &bytes)
        return bytes
    }

    private static func header(length: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        append(UInt32(length), to: &bytes)  // nlmsg_len
        append(sockDiagByFamily, to: &bytes)  // nlmsg_type
        append(requestFlag, to: &bytes)  // nlmsg_flags: one socket, no dump
        append(UInt32(1), to: &bytes)  // nlmsg_seq
        append(UInt32(0), to: &bytes)  // nlmsg_pid
        return bytes
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Sends one request, returns the first answer (nil: no socket, no module, no answer in 200 ms).
    private static func roundTrip(_ request: [UInt8]) -> [UInt8]? {
        let descriptor = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), netlinkSockDiag)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard request.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, 0) }) == request.count else { return nil }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(buffer[0..<count]) : nil
    }

    private static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16? {
        at + 2 <= bytes.count ? UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 : nil
    }

    private static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32? {
        guard at + 4 <= bytes.count else { return nil }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) }
    }

    /// The answer to `unixRequest`: `nlmsghdr`, `unix_diag_msg` (16 bytes), then attributes.
    static func parseUnix(_ bytes: [UInt8], inode: UInt64) -> UnixAnswer? {
        guard let length = u32(bytes, 0), u16(bytes, 4) == sockDiagByFamily, Int(length) <= bytes.count, Int(length) >= 32,
            u32(bytes, 20) == UInt32(truncatingIfNeeded: inode)
        else { return nil }
        var answer = UnixAnswer(peer: 0, name: nil, listening: bytes[18] == listenState)
        var offset = 32
        while offset + 4 <= Int(length) {
            guard let attributeLength = u16(bytes, offset).map(Int.init), let attributeType = u16(bytes, offset + 2), attributeLength >= 4,
                offset + attributeLength <= Int(length)
            else { break }
            let payload = Array(bytes[(offset + 4)..<(offset + attributeLength)])
            switch attributeType {
            case attributePeer:
                answer.peer = u32(bytes, offset + 4).map(UInt64.init) ?? 0
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

    /// The answer to `inetRequest`: `nlmsghdr`, then `inet_diag_msg` (its state at 1, its inode at
    /// 68); an error message (the kernel's "no such socket") is nil.
    static func parseInet(_ bytes: [UInt8]) -> InetAnswer? {
        guard let length = u32(bytes, 0), u16(bytes, 4) == sockDiagByFamily, Int(length) <= bytes.count, Int(length) >= 16 + 72,
            let inode = u32(bytes, 16 + 68)
        else { return nil }
        return InetAnswer(state: bytes[17], inode: UInt64(inode))
    }
}
