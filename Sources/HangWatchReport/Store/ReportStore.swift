#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A directory of hang reports, one JSON file each (`hang-<id>.json`).
///
/// Writes are atomic: the report goes to a temporary file in the same directory (`.hang-*.tmp`,
/// created with `O_EXCL | O_NOFOLLOW`, mode 0600), is fsync'ed, renamed over its final name, and
/// the directory is fsync'ed. A reader therefore sees either no file or a whole one.
/// The directory is created with mode 0700 (0770 when shared with the agent; see `Access`).
/// Nothing here follows a symlink.
public struct ReportStore: Sendable {
    public let directory: String
    public let access: Access

    /// Who besides the writing user may use the reports.
    public enum Access: Sendable, Equatable {
        /// Only this user: directories 0700, reports 0600.
        case `private`
        /// Also the host agent, through the report root's default ACL (which gives the agent's user
        /// `rwx` and the owning group nothing): directories 0770, reports 0640, so that the ACL
        /// mask lets the agent read, enrich and remove them. Without such an ACL, the directory's
        /// group gets that access; give services a group of their own.
        case sharedWithAgent

        var directoryMode: mode_t { self == .private ? 0o700 : 0o770 }
        var fileMode: mode_t { self == .private ? 0o600 : 0o640 }
    }

    public static let filePrefix = "hang-"
    public static let fileSuffix = ".json"
    public static let temporaryPrefix = ".hang-"
    public static let temporarySuffix = ".tmp"

    public init(directory: String, access: Access = .private) {
        self.directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.access = access
    }

    /// The file name of report `id`.
    public static func fileName(forID id: String) -> String {
        filePrefix + id + fileSuffix
    }

    /// Whether `name` is a report file name this store writes (service names never hold `..`).
    public static func isReportFileName(_ name: String) -> Bool {
        name.hasPrefix(filePrefix) && name.hasSuffix(fileSuffix) && name.count > filePrefix.count + fileSuffix.count
            && !name.contains("/") && !name.contains("..")
    }

    public func path(forID id: String) -> String {
        directory + "/" + Self.fileName(forID: id)
    }

    /// Creates the directory (and missing parents) if needed, mode 0700 (0770 shared with the
    /// agent), and checks that it is a real directory owned by this user that no one else can
    /// write into (shared with the agent: that no one outside its group can).
    public func prepare() throws {
        var info = stat()
        if case .failure(let error) = SystemCall.result("lstat", path: directory, { lstat(directory, &info) }) {
            guard error.code == ENOENT else {
                throw ReportStoreError.cannotCreateDirectory(path: directory, reason: error.reason)
            }
            try createDirectory(directory)
            if case .failure(let error) = SystemCall.result("lstat", path: directory, { lstat(directory, &info) }) {
                throw ReportStoreError.cannotCreateDirectory(path: directory, reason: error.reason)
            }
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ReportStoreError.notADirectory(directory)
        }
        guard info.st_uid == geteuid() || geteuid() == 0 else {
            throw ReportStoreError.unsafeDirectory(
                path: directory, reason: "owned by uid \(info.st_uid), not by this user (uid \(geteuid()))")
        }
        let foreignWrite = access == .private ? (S_IWGRP | S_IWOTH) : S_IWOTH
        let writableByOthers = (info.st_mode & foreignWrite) != 0
        let sticky = (info.st_mode & S_ISVTX) != 0
        if writableByOthers && !sticky {
            let mode = String(access.directoryMode, radix: 8)
            throw ReportStoreError.unsafeDirectory(
                path: directory,
                reason: "writable by \(access == .private ? "group or others" : "others") without the sticky bit; run chmod 0\(mode) \(directory)")
        }
    }

    private func createDirectory(_ path: String) throws {
        let parent = PathText.parent(of: path)
        if !parent.isEmpty && parent != path {
            var info = stat()
            if case .failure(let error) = SystemCall.result("lstat", path: parent, { lstat(parent, &info) }), error.code == ENOENT {
                try createDirectory(parent)
            }
        }
        if case .failure(let error) = SystemCall.result("mkdir", path: path, { mkdir(path, access.directoryMode) }), error.code != EEXIST {
            throw ReportStoreError.cannotCreateDirectory(path: path, reason: error.reason)
        }
    }

    /// Atomically writes `report` as `hang-<id>.json`, replacing an earlier version of the same
    /// report. Returns the final path.
    @discardableResult
    public func write(_ report: HangReport) throws -> String {
        let data = try report.encoded()
        let finalPath = path(forID: report.id)
        try writeAtomically(data, to: finalPath, name: Self.fileName(forID: report.id))
        return finalPath
    }

    private static let temporaryCounter = TemporaryCounter()

    /// Writes `data` to `finalPath` whole or not at all (a temporary file in this directory, then a
    /// rename). The CLI's report index is written the same way. `mode`: the file's permissions, when
    /// not the store's (a thread dump's answer is its user's only).
    @_spi(Internal) public func writeAtomically(_ data: Data, to finalPath: String, name: String, mode: mode_t? = nil) throws {
        let temporaryPath =
            directory + "/" + Self.temporaryPrefix + name.dropFirst(Self.filePrefix.count) + "."
            + String(getpid()) + "." + String(Self.temporaryCounter.next()) + Self.temporarySuffix
        let fd: Int32
        do {
            fd = try SystemCall.check("open", path: temporaryPath) {
                open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode ?? access.fileMode)
            }
        } catch {
            throw ReportStoreError.writeFailed(path: finalPath, errno: error.code, reason: error.reason)
        }
        var failure: SystemCallError?
        do {
            try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws in
                var offset = 0
                while offset < buffer.count {
                    offset += try SystemCall.check("write", path: temporaryPath) {
                        Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    }
                }
            }
            try SystemCall.check("fsync", path: temporaryPath) { fsync(fd) }
        } catch let error as SystemCallError {
            failure = error
        } catch {
            failure = SystemCallError(call: "write", path: temporaryPath, code: EIO)
        }
        if case .failure(let error) = SystemCall.result("close", path: temporaryPath, { close(fd) }), failure == nil { failure = error }
        if failure == nil, case .failure(let error) = SystemCall.result("rename", path: finalPath, { rename(temporaryPath, finalPath) }) {
            failure = error
        }
        if let failure {
            unlink(temporaryPath)
            throw ReportStoreError.writeFailed(path: finalPath, errno: failure.code, reason: failure.reason)
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// One report file on disk.
    public struct StoredFile: Sendable, Equatable {
        public var name: String
        public var path: String
        public var size: UInt64
        public var modified: Date
        /// The report id encoded in the file name.
        public var id: String {
            String(name.dropFirst(ReportStore.filePrefix.count).dropLast(ReportStore.fileSuffix.count))
        }
    }

    /// Report files in the directory, oldest first (names start with the UTC start time).
    /// Only regular files named like reports are listed; symlinks and anything else are skipped.
    public func list() throws -> [StoredFile] {
        var files: [StoredFile] = []
        for name in try DirectoryEntries.names(in: directory) where Self.isReportFileName(name) {
            let path = directory + "/" + name
            guard let info = DirectoryEntries.status(of: path, ifType: S_IFREG) else { continue }
            files.append(
                StoredFile(
                    name: name, path: path, size: UInt64(info.st_size),
                    modified: Date(
                        timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)))
        }
        return files.sorted { $0.name < $1.name }
    }

    /// Removes report `id` if present.
    public func remove(id: String) throws {
        let path = path(forID: id)
        if case .failure(let error) = SystemCall.result("unlink", path: path, { unlink(path) }), error.code != ENOENT {
            throw ReportStoreError.removeFailed(path: path, reason: error.reason)
        }
    }

    /// Applies `policy`, removing the oldest reports first. Returns the names removed.
    @discardableResult
    public func applyRetention(_ policy: RetentionPolicy, keeping protectedIDs: Set<String> = []) throws -> [String] {
        let victims = policy.filesToRemove(from: try list(), keeping: protectedIDs)
        var removed: [String] = []
        for file in victims {
            switch SystemCall.result("unlink", path: file.path, { unlink(file.path) }) {
            case .success: removed.append(file.name)
            case .failure(let error) where error.code == ENOENT: removed.append(file.name)
            case .failure: break
            }
        }
        return removed
    }

    /// The name a thread dump's answer (or refusal) starts with: `.dump-<nonce>.json` / `.refused`.
    public static let dumpAnswerPrefix = ".dump-"

    /// Whether `name` is a thread dump's answer or refusal.
    public static func isDumpAnswerName(_ name: String) -> Bool {
        name.hasPrefix(dumpAnswerPrefix) && (name.hasSuffix(".json") || name.hasSuffix(".refused")) && !name.contains("/")
    }

    /// Removes thread dumps' answers nobody took (their reader died), once older than `age`.
    @discardableResult
    public func removeStaleDumpAnswers(olderThan age: TimeInterval, now: Date = Date()) throws -> Int {
        try removeStale(olderThan: age, now: now, matches: Self.isDumpAnswerName)
    }

    /// Removes temporary files left by writers that died mid-write, once older than `age`.
    @discardableResult
    public func removeStaleTemporaryFiles(olderThan age: TimeInterval, now: Date = Date()) throws -> Int {
        try removeStale(olderThan: age, now: now) { $0.hasPrefix(Self.temporaryPrefix) && $0.hasSuffix(Self.temporarySuffix) }
    }

    /// Removes the regular files whose names `matches` accepts, once older than `age`.
    private func removeStale(olderThan age: TimeInterval, now: Date, matches: (String) -> Bool) throws -> Int {
        var removed = 0
        for name in try DirectoryEntries.names(in: directory) where matches(name) {
            let path = directory + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            let modified = Double(info.st_mtim.tv_sec)
            if now.timeIntervalSince1970 - modified >= age && unlink(path) == 0 {
                removed += 1
            }
        }
        return removed
    }
}

/// A process-wide counter for unique temporary names.
final class TemporaryCounter: Sendable {
    private let value = AtomicCounter()
    func next() -> UInt64 { value.increment() }
}
