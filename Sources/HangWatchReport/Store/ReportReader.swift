#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Reads report files defensively: never follows a symlink, never blocks on a FIFO, refuses files
/// over `maxBytes` (by their size, before reading a byte) and reports with more than one name (a
/// hard link: a report is written under one name only), and turns every problem into a
/// `ReportReadError` that names the file.
public struct ReportReader: Sendable {
    /// Larger files are refused without being read.
    public var maxBytes: UInt64
    /// Whether a file with several names (hard links) is refused.
    public var refusesHardLinks: Bool

    public static let defaultMaxBytes: UInt64 = 16 << 20

    public init(maxBytes: UInt64 = ReportReader.defaultMaxBytes, refusesHardLinks: Bool = true) {
        self.maxBytes = maxBytes
        self.refusesHardLinks = refusesHardLinks
    }

    /// The bytes of the report at `path`.
    public func readData(path: String) throws -> Data {
        let fd: Int32
        do {
            fd = try SystemCall.check("open", path: path) { open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        } catch {
            switch error.code {
            case ENOENT: throw ReportReadError.notFound(path)
            case ELOOP: throw ReportReadError.notRegularFile(path)
            default: throw ReportReadError.unreadable(path: path, errno: error.code, reason: error.reason)
            }
        }
        defer { close(fd) }
        do {
            var info = stat()
            try SystemCall.check("fstat", path: path) { fstat(fd, &info) }
            guard (info.st_mode & S_IFMT) == S_IFREG else { throw ReportReadError.notRegularFile(path) }
            if refusesHardLinks && info.st_nlink > 1 { throw ReportReadError.hardLinked(path: path, names: UInt64(info.st_nlink)) }
            let size = UInt64(info.st_size)
            guard size <= maxBytes else { throw ReportReadError.tooLarge(path: path, size: size, limit: maxBytes) }
            var data = Data(count: Int(size))
            var total = 0
            try data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) throws in
                while total < buffer.count {
                    let count = try SystemCall.check("read", path: path) { Glibc.read(fd, buffer.baseAddress! + total, buffer.count - total) }
                    if count == 0 { break }
                    total += count
                }
            }
            return data.prefix(total)
        } catch let error as SystemCallError {
            throw ReportReadError.unreadable(path: path, errno: error.code, reason: error.reason)
        }
    }

    /// The report at `path`.
    public func read(path: String) throws -> HangReport {
        let data = try readData(path: path)
        do {
            return try HangReport.decode(data)
        } catch let error as ReportReadError {
            switch error {
            case .malformed(let reason): throw ReportReadError.malformed("\(path): \(reason)")
            case .unsupportedSchema(let schema, nil): throw ReportReadError.unsupportedSchema(schema, path: path)
            default: throw error
            }
        }
    }
}
