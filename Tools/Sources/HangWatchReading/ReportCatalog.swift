import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport
import Synchronization

/// All the reports under a directory: the directory itself and its subdirectories one level down
/// (the agent keeps one per service). Summaries are cached in an index file keyed by each report's
/// path, size, modification time and inode, so an unchanged report is never read twice.
///
/// Files that cannot be read (truncated, too large, not JSON, a future schema, not a regular file)
/// are skipped and returned as problems naming the file; everything else is still listed.
public struct ReportCatalog: Sendable {
    public let directory: String
    /// Where the index lives; nil: no index.
    public let indexPath: String?
    public let reader: ReportReader

    public init(directory: String, indexPath: String? = ReportCatalog.defaultIndexPath, reader: ReportReader = ReportReader()) {
        self.directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.indexPath = indexPath.map { $0 + "/index-" + Self.key(for: directory) + ".json" }
        self.reader = reader
    }

    /// `$XDG_CACHE_HOME/hangwatch` or `~/.cache/hangwatch`.
    public static var defaultIndexPath: String? {
        let environment = ProcessInfo.processInfo.environment
        if let cache = environment["XDG_CACHE_HOME"], !cache.isEmpty { return cache + "/hangwatch" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.cache/hangwatch" }
        return nil
    }

    /// A file the scan could not use.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        public var path: String
        public var reason: String
        /// The file is there but this user may not read it (`EACCES`, `EPERM`): a question of
        /// permissions, not of the file.
        public var permissionDenied = false
        public var description: String { "skipped \(path): \(reason)" }
    }

    /// One report file found by a scan.
    public struct Entry: Sendable, Equatable {
        public var path: String
        /// The file name (the report's start time and id).
        public var name: String
        public var size: UInt64
        public var modifiedNanoseconds: Int64
        public var inode: UInt64
    }

    /// The directory, then its service directories (subdirectories one level down, not symlinks,
    /// not hidden), in the order the system lists them.
    public func directories() throws -> [String] {
        var directories = [directory]
        for name in try DirectoryEntries.names(in: directory) where !name.hasPrefix(".") {
            let path = directory + "/" + name
            if DirectoryEntries.status(of: path, ifType: S_IFDIR) != nil { directories.append(path) }
        }
        return directories
    }

    /// Report files under the directory (not following symlinks), oldest name first.
    public func files() throws -> [Entry] {
        var entries: [Entry] = []
        for folder in try directories() {
            // A service directory that vanished or cannot be read since: the others still count.
            guard let names = try? DirectoryEntries.names(in: folder) else { continue }
            for name in names where ReportStore.isReportFileName(name) {
                let path = folder + "/" + name
                guard let info = DirectoryEntries.status(of: path, ifType: S_IFREG) else { continue }
                entries.append(
                    Entry(
                        path: path, name: name, size: UInt64(info.st_size),
                        modifiedNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                        inode: UInt64(info.st_ino)))
            }
        }
        return entries.sorted { ($0.name, $0.path) < ($1.name, $1.path) }
    }

    /// Summaries of every readable report, and the files that were skipped. `enrich` runs on each
    /// report read anew (symbolication, for readable top frames); `progress` is told how far along
    /// the reading is. Reports not in the index are read on every CPU at once.
    public func summaries(
        enrich: (@Sendable (inout HangReport) -> Void)? = nil, progress: (@Sendable (Int, Int) -> Void)? = nil
    ) throws -> (summaries: [ReportSummary], problems: [Problem]) {
        let entries = try files()
        let index = loadIndex()
        var fresh: [String: IndexEntry] = [:]
        var records: [IndexEntry?] = Array(repeating: nil, count: entries.count)
        var unread: [Int] = []
        for (position, entry) in entries.enumerated() {
            if let cached = index[entry.path], cached.size == entry.size, cached.modified == entry.modifiedNanoseconds,
                cached.inode == entry.inode
            {
                records[position] = cached
            } else {
                unread.append(position)
            }
        }
        for (position, record) in zip(unread, read(unread.map { entries[$0] }, enrich: enrich, progress: progress)) {
            records[position] = record
        }
        var summaries: [ReportSummary] = []
        var problems: [Problem] = []
        summaries.reserveCapacity(entries.count)
        // Nothing new and nothing gone: the index stays as it is.
        let unchanged = unread.isEmpty && index.count == entries.count
        for (entry, record) in zip(entries, records) {
            guard let record else { continue }
            if let summary = record.summary {
                summaries.append(summary)
            } else if let reason = record.problem {
                problems.append(Problem(path: entry.path, reason: reason, permissionDenied: record.permissionDenied))
            }
            // An ongoing report will change: it is listed, but not remembered. A file this user may
            // not read is tried again next time (its permissions can change without its contents).
            if !unchanged, !record.permissionDenied,
                record.problem != nil || (record.summary != nil && record.summary?.outcome != .ongoing)
            {
                fresh[entry.path] = record
            }
        }
        if !unchanged && fresh != index { saveIndex(fresh) }
        return (summaries, problems)
    }

    /// Reads `entries` in parallel, one record each, in order.
    private func read(
        _ entries: [Entry], enrich: (@Sendable (inout HangReport) -> Void)?, progress: (@Sendable (Int, Int) -> Void)?
    ) -> [IndexEntry] {
        guard !entries.isEmpty else { return [] }
        let results = Mutex<(records: [Int: IndexEntry], done: Int)>(([:], 0))
        let reader = self.reader
        let workers = min(entries.count, max(1, ProcessInfo.processInfo.activeProcessorCount))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for position in stride(from: worker, to: entries.count, by: workers) {
                let entry = entries[position]
                var record = IndexEntry(size: entry.size, modified: entry.modifiedNanoseconds, inode: entry.inode)
                do {
                    var report = try reader.read(path: entry.path)
                    enrich?(&report)
                    record.summary = ReportSummary(report: report, path: entry.path)
                } catch {
                    let reason = (error as? ReportReadError).map { "\($0)" } ?? "\(error)"
                    record.problem = reason.replacing(entry.path + ": ", with: "")
                    if case .unreadable(_, let code, _)? = error as? ReportReadError, code == EACCES || code == EPERM {
                        record.permissionDenied = true
                    }
                }
                results.withLock { results in
                    results.records[position] = record
                    results.done += 1
                    progress?(results.done, entries.count)
                }
            }
        }
        return results.withLock { results in (0..<entries.count).map { results.records[$0]! } }
    }

    // MARK: - The index

    struct IndexEntry: Equatable {
        var size: UInt64
        var modified: Int64
        var inode: UInt64
        var summary: ReportSummary?
        var problem: String?
        /// Never written to the index (such an entry is not kept).
        var permissionDenied = false
    }

    /// 5: each summary's signature kind and labels (schema 1.5). 6: its service version. 7: its
    /// container and pod (`resource`, schema 1.6).
    static let indexVersion = 7

    func loadIndex() -> [String: IndexEntry] {
        guard let indexPath, let data = try? ReportReader(maxBytes: 256 << 20, refusesHardLinks: false).readData(path: indexPath),
            let file = try? JSONDecoder().decode(ReportIndexFile.self, from: data),
            file.version == Self.indexVersion, file.directory == directory, let entries = file.entries()
        else { return [:] }
        return entries
    }

    func saveIndex(_ entries: [String: IndexEntry]) {
        guard let indexPath else { return }
        let folder = PathText.parent(of: indexPath)
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard let data = try? JSONEncoder().encode(ReportIndexFile(version: Self.indexVersion, directory: directory, entries: entries)) else {
            return
        }
        // The index is a cache: a failure to write it only makes the next run slower.
        try? ReportStore(directory: folder).writeAtomically(data, to: indexPath, name: PathText.lastComponent(of: indexPath))
    }

    static func key(for directory: String) -> String {
        let resolved = (try? FileManager.default.destinationOfSymbolicLink(atPath: directory)) ?? directory
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in resolved.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
