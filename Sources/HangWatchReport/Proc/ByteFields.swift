/// Space-separated fields of a /proc file, and number parsing without building strings: the
/// watchdog reads several proc files per sample.
package struct ByteFields: IteratorProtocol {
    private var remaining: ArraySlice<UInt8>

    package init(_ bytes: ArraySlice<UInt8>) {
        remaining = bytes
    }

    package mutating func next() -> ArraySlice<UInt8>? {
        guard let start = remaining.firstIndex(where: { !Self.isSeparator($0) }) else { return nil }
        let rest = remaining[start...]
        let end = rest.firstIndex(where: Self.isSeparator) ?? rest.endIndex
        remaining = rest[end...]
        return rest[start..<end]
    }

    private static func isSeparator(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0a || byte == 0x09
    }

    package static func decimal(_ field: ArraySlice<UInt8>) -> UInt64? {
        guard !field.isEmpty, field.count <= 20 else { return nil }
        var value: UInt64 = 0
        for byte in field {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            let (multiplied, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = multiplied + UInt64(byte - 0x30)
        }
        return value
    }

    package static func signedDecimal(_ field: ArraySlice<UInt8>) -> Int? {
        if field.first == UInt8(ascii: "-") {
            return decimal(field.dropFirst()).flatMap { $0 <= UInt64(Int.max) ? -Int($0) : nil }
        }
        return decimal(field).flatMap { $0 <= UInt64(Int.max) ? Int($0) : nil }
    }

    /// `0x1f`, `1f`.
    package static func hex(_ field: ArraySlice<UInt8>) -> UInt? {
        var digits = field
        if digits.count >= 2, digits.first == UInt8(ascii: "0"),
            digits[digits.startIndex + 1] == UInt8(ascii: "x") || digits[digits.startIndex + 1] == UInt8(ascii: "X")
        {
            digits = digits.dropFirst(2)
        }
        guard !digits.isEmpty, digits.count <= 16 else { return nil }
        var value: UInt = 0
        for byte in digits {
            let digit: UInt
            switch byte {
            case 0x30...0x39: digit = UInt(byte - 0x30)
            case 0x61...0x66: digit = UInt(byte - 0x61 + 10)
            case 0x41...0x46: digit = UInt(byte - 0x41 + 10)
            default: return nil
            }
            value = value << 4 | digit
        }
        return value
    }
}
