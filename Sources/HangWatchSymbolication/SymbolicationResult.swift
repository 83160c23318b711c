/// A code address resolved to a function and, where debug information exists, a source line.
public struct SymbolicatedFrame: Sendable, Equatable {
    /// Demangled function name.
    public var symbol: String
    /// Bytes from the start of the function.
    public var offset: UInt64
    public var file: String?
    public var line: Int?
}

/// Why an image could not be used for symbolication.
public enum ImageSymbolsError: Error, Equatable, CustomStringConvertible {
    case fileNotFound(String)
    case buildIDMismatch(path: String, expected: String, found: String?)
    case unreadable(path: String, reason: String)

    public var description: String {
        switch self {
        case .fileNotFound(let path):
            return "\(path): not found (give --debug-dir with a copy of the binary or its debug file)"
        case .buildIDMismatch(let path, let expected, let found):
            return "\(path): build-id \(found ?? "none") does not match the report's \(expected); refusing to use it"
        case .unreadable(let path, let reason):
            return "\(path): \(reason)"
        }
    }
}
