/// Why the report store could not do what was asked. Messages name the path and the fix.
public enum ReportStoreError: Error, Equatable, CustomStringConvertible {
    case cannotCreateDirectory(path: String, reason: String)
    case notADirectory(String)
    case unsafeDirectory(path: String, reason: String)
    case writeFailed(path: String, errno: Int32, reason: String)
    case removeFailed(path: String, reason: String)
    case listFailed(path: String, reason: String)

    public var description: String {
        switch self {
        case .cannotCreateDirectory(let path, let reason):
            return "cannot create report directory \(path): \(reason); create it or choose another directory"
        case .notADirectory(let path):
            return "report directory \(path) exists but is not a directory (symlinks are refused)"
        case .unsafeDirectory(let path, let reason):
            return "refusing report directory \(path): \(reason)"
        case .writeFailed(let path, _, let reason):
            return "cannot write report \(path): \(reason)"
        case .removeFailed(let path, let reason):
            return "cannot remove \(path): \(reason)"
        case .listFailed(let path, let reason):
            return "cannot list report directory \(path): \(reason)"
        }
    }

    /// True for a full disk or quota: the write may succeed later, nothing is wrong with the report.
    public var isOutOfSpace: Bool {
        if case .writeFailed(_, let code, _) = self { return code == 28 /* ENOSPC */ || code == 122 /* EDQUOT */ }
        return false
    }
}
