/// The words and texts of an I/O wait's descriptors: TCP states as `ss` names them, IPv6
/// addresses (RFC 5952), the mount table (`/proc/self/mountinfo`) and `fdinfo` fields. Pure,
/// tested on text as the kernel writes it.
enum EndpointText {
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

    /// RFC 5952 text of 16 bytes: lower-case hex groups, the longest run of two or more zero
    /// groups written `::`.
    static func ipv6(_ bytes: [UInt8]) -> String {
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
