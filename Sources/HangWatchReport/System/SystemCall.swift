#if canImport(Glibc)
import Glibc
#endif

/// A system call that failed: which, on what, and `errno`'s value right after it.
@_spi(Internal) public struct SystemCallError: Error, Equatable, CustomStringConvertible {
    public var call: String
    public var path: String?
    public var code: Int32

    public init(call: String, path: String? = nil, code: Int32) {
        self.call = call
        self.path = path
        self.code = code
    }

    /// `strerror`'s words for the code ("Permission denied").
    public var reason: String { String(cString: strerror(code)) }

    public var description: String { "\(call)(\(path ?? "")): \(reason)" }

    /// A full disk or quota: a write may succeed later.
    public var isOutOfSpace: Bool { code == ENOSPC || code == EDQUOT }
}

/// The one place in this package's Swift code where `errno` is read: a system call's failure
/// (it returned -1) becomes a `SystemCallError`, read at once, before anything else can change
/// `errno`. Calls cut short by a signal are made again.
@_spi(Internal) public enum SystemCall {
    /// Runs `body`, which returns -1 on failure (and sets `errno`).
    @discardableResult
    public static func check<Value: BinaryInteger>(
        _ call: String, path: String? = nil, retryingInterrupted: Bool = true, _ body: () -> Value
    ) throws(SystemCallError) -> Value {
        while true {
            let value = body()
            guard value == -1 else { return value }
            let code = errno
            if code == EINTR && retryingInterrupted { continue }
            throw SystemCallError(call: call, path: path, code: code)
        }
    }

    /// Runs `body`, which returns nil on failure (and sets `errno`): `opendir`, `fopen`.
    public static func check<Pointer>(_ call: String, path: String? = nil, _ body: () -> Pointer?) throws(SystemCallError) -> Pointer {
        guard let pointer = body() else { throw SystemCallError(call: call, path: path, code: errno) }
        return pointer
    }

    /// The same, as a result, for callers that treat some failures (`ENOENT`, `EEXIST`) as fine.
    public static func result<Value: BinaryInteger>(
        _ call: String, path: String? = nil, _ body: () -> Value
    ) -> Result<Value, SystemCallError> {
        do {
            return .success(try check(call, path: path, body))
        } catch {
            return .failure(error)
        }
    }
}
