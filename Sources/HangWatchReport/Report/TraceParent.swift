/// A W3C Trace Context `traceparent` value (`00-<32 hex trace id>-<16 hex span id>-<2 hex
/// flags>`), as a hang's `traceparent` label carries it: the agent links the hang's OTLP log
/// record to that trace and span. Parsing never fails loudly: a value that is not a valid
/// traceparent (wrong length or version, uppercase or other non-hex digits, an all-zero trace or
/// span id, version `ff`) is nil, and the record simply has no trace link.
public struct TraceParent: Sendable, Equatable {
    /// 32 lowercase hex digits, not all zero.
    public var traceID: String
    /// 16 lowercase hex digits, not all zero (the parent span: the request's span).
    public var spanID: String
    /// The trace flags (bit 0: sampled).
    public var flags: UInt8
    public var version: UInt8

    /// Parses `text` (surrounding spaces and tabs ignored). A version above 00 may carry more
    /// fields after the flags, `-` separated, as the specification allows; version 00 may not.
    public init?(_ text: String) {
        let trimmed = Array(text.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed())
        guard trimmed.count >= 55, trimmed[2] == 0x2d, trimmed[35] == 0x2d, trimmed[52] == 0x2d,
            let version = Self.hexByte(trimmed[0..<2]), version != 0xff,
            trimmed.count == 55 || (version > 0 && trimmed[55] == 0x2d),
            let flags = Self.hexByte(trimmed[53..<55])
        else { return nil }
        let trace = trimmed[3..<35]
        let span = trimmed[36..<52]
        guard trace.allSatisfy(Self.isLowerHex), span.allSatisfy(Self.isLowerHex), trace.contains(where: { $0 != 0x30 }),
            span.contains(where: { $0 != 0x30 })
        else { return nil }
        self.version = version
        self.flags = flags
        traceID = String(decoding: trace, as: UTF8.self)
        spanID = String(decoding: span, as: UTF8.self)
    }

    /// The value in its canonical form (version 00).
    public var text: String {
        "00-\(traceID)-\(spanID)-" + String(flags, radix: 16).leftPadded(to: 2)
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
    }

    private static func hexByte(_ digits: ArraySlice<UInt8>) -> UInt8? {
        guard digits.count == 2, digits.allSatisfy(isLowerHex) else { return nil }
        return UInt8(String(decoding: digits, as: UTF8.self), radix: 16)
    }
}
