/// The socket tables Linux shows in `/proc/net` (`tcp`, `tcp6`, `udp`, `udp6`, `unix`) and the
/// mount table (`/proc/self/mountinfo`), parsed: pure, tested on lines as the kernel writes them.
enum ProcNetTables {
    /// One row of `/proc/net/tcp` or `udp` (and their `6` forms).
    struct InetSocket: Equatable, Sendable {
        var local: String
        var remote: String
        /// The state's hex code (`01` ESTABLISHED, `0A` LISTEN, ...).
        var stateCode: UInt8
        var sendQueue: Int
        var receiveQueue: Int
        var inode: UInt64

        /// `host:port` of `local` and `remote` split, for matching a listener.
        var localPort: String? { local.split(separator: ":").last.map(String.init) }
    }

    /// One row of `/proc/net/unix`.
    struct UnixSocket: Equatable, Sendable {
        var inode: UInt64
        /// `stream`, `dgram`, `seqpacket`.
        var type: String
        /// The bound path, `@name` for an abstract one; nil when unbound.
        var path: String?
        var listening: Bool
    }

    /// The TCP state names, as `ss` writes them.
    static func tcpState(_ code: UInt8) -> String {
        switch code {
        case 0x01: return "ESTABLISHED"
        case 0x02: return "SYN-SENT"
        case 0x03: return "SYN-RECV"
        case 0x04: return "FIN-WAIT-1"
        case 0x05: return "FIN-WAIT-2"
        case 0x06: return "TIME-WAIT"
        case 0x07: return "CLOSE"
        case 0x08: return "CLOSE-WAIT"
        case 0x09: return "LAST-ACK"
        case 0x0A: return "LISTEN"
        case 0x0B: return "CLOSING"
        default: return "state \(code)"
        }
    }

    /// A UDP socket's state: connected (`ESTABLISHED`) or not (`UNCONN`).
    static func udpState(_ code: UInt8) -> String { code == 0x01 ? "ESTABLISHED" : "UNCONN" }

    /// The rows of a `/proc/net/tcp`-like table.
    static func inetSockets(_ text: String) -> [InetSocket] {
        text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 10, let local = address(fields[1]), let remote = address(fields[2]),
                let state = UInt8(fields[3], radix: 16), let inode = UInt64(fields[9])
            else { return nil }
            let queues = fields[4].split(separator: ":")
            guard queues.count == 2, let send = Int(queues[0], radix: 16), let receive = Int(queues[1], radix: 16) else { return nil }
            return InetSocket(local: local, remote: remote, stateCode: state, sendQueue: send, receiveQueue: receive, inode: inode)
        }
    }

    /// `0100007F:1F90` → `127.0.0.1:8080`; a 32-digit IPv6 address → `[::1]:8080`. The kernel
    /// writes each 32-bit word of the address in the host's byte order (little-endian here).
    static func address<S: StringProtocol>(_ field: S) -> String? {
        let parts = field.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1], radix: 16) else { return nil }
        let hex = Array(parts[0].utf8)
        guard hex.count == 8 || hex.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for word in stride(from: 0, to: hex.count, by: 8) {
            guard let value = UInt32(String(decoding: hex[word..<word + 8], as: UTF8.self), radix: 16) else { return nil }
            // The word was printed as a host-order integer: its bytes, in memory order.
            withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
        }
        if bytes.count == 4 { return "\(bytes.map(String.init).joined(separator: ".")):\(port)" }
        // An IPv4 address mapped into IPv6 (::ffff:a.b.c.d) is written as IPv4.
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return "\(bytes[12...].map(String.init).joined(separator: ".")):\(port)"
        }
        return "[\(ipv6Text(bytes))]:\(port)"
    }

    /// RFC 5952 text of 16 bytes: lower-case hex groups, the longest run of two or more zero
    /// groups written `::`.
    static func ipv6Text(_ bytes: [UInt8]) -> String {
        let groups = (0..<8).map { UInt16(bytes[$0 * 2]) << 8 | UInt16(bytes[$0 * 2 + 1]) }
        var best: Range<Int>?
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else { index += 1; continue }
            var end = index
            while end < 8 && groups[end] == 0 { end += 1 }
            if end - index >= 2, end - index > (best?.count ?? 0) { best = index..<end }
            index = end
        }
        let text = { (range: ArraySlice<UInt16>) in range.map { String($0, radix: 16) }.joined(separator: ":") }
        guard let best else { return text(groups[...]) }
        return text(groups[..<best.lowerBound]) + "::" + text(groups[best.upperBound...])
    }

    /// The rows of `/proc/net/unix`.
    static func unixSockets(_ text: String) -> [UnixSocket] {
        text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: true)
            guard fields.count >= 7, let flags = UInt32(fields[3], radix: 16), let type = UInt16(fields[4], radix: 16),
                let inode = UInt64(fields[6])
            else { return nil }
            let name: String
            switch type {
            case 1: name = "stream"
            case 2: name = "dgram"
            case 5: name = "seqpacket"
            default: name = "type \(type)"
            }
            let path = fields.count > 7 ? String(fields[7]) : nil
            return UnixSocket(inode: inode, type: name, path: path, listening: flags & 0x10000 != 0)  // __SO_ACCEPTCON
        }
    }

    /// One mount of `/proc/self/mountinfo`.
    struct Mount: Equatable, Sendable {
        var id: Int
        /// `major:minor`.
        var device: String
        var mountPoint: String
        var filesystem: String
        var source: String
    }

    static func mounts(_ text: String) -> [Mount] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 7, let id = Int(fields[0]), let separator = fields.firstIndex(of: "-"),
                separator + 2 < fields.count
            else { return nil }
            return Mount(
                id: id, device: String(fields[2]), mountPoint: unescape(fields[4]), filesystem: String(fields[separator + 1]),
                source: unescape(fields[separator + 2]))
        }
    }

    /// The kernel writes a space, tab, newline or backslash in a path as `\040`-style octal.
    static func unescape<S: StringProtocol>(_ field: S) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        let source = Array(field.utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "\\"), index + 3 < source.count,
                let value = UInt8(String(decoding: source[index + 1...index + 3], as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(source[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A field of a `/proc/<pid>/fdinfo/<fd>` file (`flags`, `mnt_id`, `pos`).
    static func fdinfoField(_ name: String, in text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            return line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }
}
