/// Protocol Buffers' binary wire format, the part a pprof profile needs: varints, length-delimited
/// fields (strings, nested messages) and packed repeated integers. Fields holding their default
/// (zero, false, empty) are left out, as proto3 writers do.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    private enum WireType: UInt64 {
        case varint = 0, lengthDelimited = 2
    }

    private mutating func key(_ field: Int, _ type: WireType) {
        varint(UInt64(field) << 3 | type.rawValue)
    }

    private mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func uint64(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        key(field, .varint)
        varint(value)
    }

    /// `int64`: two's complement, so a negative value takes ten bytes.
    mutating func int64(_ field: Int, _ value: Int64) {
        uint64(field, UInt64(bitPattern: value))
    }

    mutating func bool(_ field: Int, _ value: Bool) {
        uint64(field, value ? 1 : 0)
    }

    mutating func bytes(_ field: Int, _ value: [UInt8]) {
        key(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A repeated string: every element is written, the empty one too (pprof's string table
    /// starts with "").
    mutating func string(_ field: Int, _ value: String) {
        bytes(field, Array(value.utf8))
    }

    mutating func message(_ field: Int, _ build: (inout ProtobufWriter) -> Void) {
        var nested = ProtobufWriter()
        build(&nested)
        bytes(field, nested.bytes)
    }

    mutating func packedUInt64(_ field: Int, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        var packed = ProtobufWriter()
        for value in values { packed.varint(value) }
        bytes(field, packed.bytes)
    }

    mutating func packedInt64(_ field: Int, _ values: [Int64]) {
        packedUInt64(field, values.map { UInt64(bitPattern: $0) })
    }
}
