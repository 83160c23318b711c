/// The hexadecimal numbers of a report (`address`, `offset`, an image's `base`): `0x7f3a…`, or
/// without the prefix.
@_spi(Internal) public enum HexText {
    public static func parse(_ text: String) -> UInt64? {
        let digits = text.hasPrefix("0x") || text.hasPrefix("0X") ? text.dropFirst(2) : Substring(text)
        return UInt64(digits, radix: 16)
    }
}
