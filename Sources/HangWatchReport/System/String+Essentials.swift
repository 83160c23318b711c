#if canImport(Glibc)
import Glibc
#endif

// What Foundation's `String` had and FoundationEssentials has not, for the modules the `hangwatch`
// CLI links: they import FoundationEssentials only, as full Foundation would link ICU's 30 MiB of
// data into the CLI (docs/packaging.md). SPI: the CLI's modules use them too.
extension String {
    /// C's `printf` formatting of numbers (`%.1f`, `%02x`, `%.3g`, `%04ld`): what
    /// `String(format:)` did. Numbers only (no `%s`, no `%@`); an `Int` takes `%ld`. The C locale,
    /// as `String(format:)` without a locale.
    @_spi(Internal) public init(printf format: String, _ arguments: any CVarArg...) {
        var buffer = [CChar](repeating: 0, count: 64)
        let needed = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
        if needed >= buffer.count {
            buffer = [CChar](repeating: 0, count: Int(needed) + 1)
            _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
        }
        self = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Without leading and trailing spaces and tabs: `trimmingCharacters(in: .whitespaces)`
    /// (Unicode's space separators and the tab; newlines stay).
    @_spi(Internal) public func trimmingWhitespace() -> String {
        func isSpace(_ character: Character) -> Bool {
            character == "\t" || character.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator }
        }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}

extension Substring {
    /// `String.trimmingWhitespace()` of a substring.
    @_spi(Internal) public func trimmingWhitespace() -> String { String(self).trimmingWhitespace() }
}
