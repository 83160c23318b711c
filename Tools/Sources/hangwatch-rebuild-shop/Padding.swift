// The second build of this service (HANGWATCH_REBUILD_VARIANT=2 when it is built) has this code,
// the first has none: "unrelated code added elsewhere". The file sorts before the others, so its
// code comes first in the executable and every hang site's address moves.
#if REBUILD_VARIANT_2
enum Padding {
    @inline(never)
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }

    @inline(never)
    static func describe(_ value: Int) -> String {
        switch value % 16 {
        case 0: return "zero \(value)"
        case 1: return "one \(value * 3)"
        case 2: return "two \(value &* 7)"
        case 3: return "three \(value / 3)"
        case 4: return "four \(String(value, radix: 16))"
        case 5: return "five \(String(value, radix: 2))"
        case 6: return "six \(value.description.count)"
        case 7: return "seven \(value.nonzeroBitCount)"
        case 8: return "eight \(value.leadingZeroBitCount)"
        case 9: return "nine \(value.trailingZeroBitCount)"
        case 10: return "ten \([value, value].map { $0 * 2 })"
        case 11: return "eleven \(Set([value, value + 1]).count)"
        case 12: return "twelve \(["k": value]["k"] ?? 0)"
        case 13: return "thirteen \(String(repeating: "x", count: value % 5))"
        case 14: return "fourteen \(Double(value) / 7)"
        default: return "many \(value.magnitude)"
        }
    }

    @inline(never)
    static func run() -> String {
        describe(Int(checksum(Array("unrelated".utf8))))
    }
}
#endif
