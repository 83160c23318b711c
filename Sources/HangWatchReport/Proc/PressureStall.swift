/// Pressure stall information (`/proc/pressure/memory`, a v2 cgroup's `memory.pressure`): the
/// `some` line's `total`, the microseconds during which at least one task (of the system, or of
/// the cgroup) was stalled on memory, and `full`'s, during which all its non-idle tasks were.
@_spi(Internal) public struct PressureStall: Sendable, Equatable {
    public var someMicroseconds: UInt64
    public var fullMicroseconds: UInt64?

    public init(someMicroseconds: UInt64, fullMicroseconds: UInt64? = nil) {
        self.someMicroseconds = someMicroseconds
        self.fullMicroseconds = fullMicroseconds
    }

    /// `some avg10=0.00 avg60=0.00 avg300=0.00 total=N` (and a `full` line), from its bytes.
    package static func parse(bytes: ArraySlice<UInt8>) -> PressureStall? {
        var some: UInt64?
        var full: UInt64?
        var line: ArraySlice<UInt8>?
        var fields = ByteFields(bytes)
        while let field = fields.next() {
            if field.elementsEqual("some".utf8) || field.elementsEqual("full".utf8) {
                line = field
            } else if let name = line, field.starts(with: "total=".utf8) {
                let value = ByteFields.decimal(field.dropFirst(6))
                if name.elementsEqual("some".utf8) { some = value } else { full = value }
                line = nil
            }
        }
        return some.map { PressureStall(someMicroseconds: $0, fullMicroseconds: full) }
    }

    public static func parse(_ text: some StringProtocol) -> PressureStall? {
        parse(bytes: Array(text.utf8)[...])
    }
}
