/// Why a report file could not be read.
public enum ReportReadError: Error, Equatable, CustomStringConvertible {
    case notFound(String)
    case notRegularFile(String)
    /// A regular file with more than one name: a hard link to a file that may live elsewhere.
    case hardLinked(path: String, names: UInt64)
    case tooLarge(path: String, size: UInt64, limit: UInt64)
    case unreadable(path: String, errno: Int32, reason: String)
    case malformed(String)
    /// A schema this version does not read; `path` once the file is known.
    case unsupportedSchema(String, path: String? = nil)

    public var description: String {
        switch self {
        case .notFound(let path):
            return "\(path): no such report"
        case .notRegularFile(let path):
            return "\(path): not a regular file (symlinks, FIFOs and devices are never read)"
        case .hardLinked(let path, let names):
            return "\(path): a hard link (\(names) names for one file; a report has one), never read"
        case .tooLarge(let path, let size, let limit):
            return "\(path): \(size) bytes is over the \(limit)-byte limit for a report"
        case .unreadable(let path, _, let reason):
            return "\(path): cannot read: \(reason)"
        case .malformed(let reason):
            return "not a valid hang report: \(reason)"
        case .unsupportedSchema(let schema, let path):
            return (path.map { "\($0): " } ?? "") + "unsupported report schema \"\(schema.prefix(80))\" (this version reads \(HangReport.majorSchema) and \(HangReport.majorSchema).x)"
        }
    }
}
