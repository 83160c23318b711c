import Foundation
@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// The report root the agent manages: one subdirectory per monitored service (reports written
/// directly into the root count as service ""). The agent reads, rewrites and deletes only regular
/// files whose names it recognises, never through a symlink.
struct Spool: Sendable {
    let root: String

    init(root: String) {
        self.root = root
    }

    enum Problem: Error, Equatable, CustomStringConvertible {
        case missing(String)
        case unsafe(path: String, reason: String)

        var description: String {
            switch self {
            case .missing(let path): return "\(path): no such directory (create it: systemd-tmpfiles --create hangwatch.conf)"
            case .unsafe(let path, let reason): return "\(path): refusing an unsafe spool: \(reason)"
            }
        }
    }

    /// Refuses a root that is not a real directory, is owned by someone other than this user (or
    /// root), or that others may write into without the sticky bit (they could swap files under
    /// the agent); group-writable with the sticky bit is the intended layout.
    func check(effectiveUser: uid_t = geteuid()) throws {
        var info = stat()
        if case .failure(let error) = SystemCall.result("lstat", path: root, { lstat(root, &info) }) {
            if error.code == ENOENT { throw Problem.missing(root) }
            throw Problem.unsafe(path: root, reason: error.reason)
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw Problem.unsafe(path: root, reason: (info.st_mode & S_IFMT) == S_IFLNK ? "it is a symlink" : "not a directory")
        }
        guard info.st_uid == effectiveUser || info.st_uid == 0 else {
            throw Problem.unsafe(path: root, reason: "owned by uid \(info.st_uid), not by this user (uid \(effectiveUser)) or root")
        }
        let sticky = info.st_mode & S_ISVTX != 0
        if info.st_mode & S_IWOTH != 0 && !sticky {
            throw Problem.unsafe(path: root, reason: "writable by everyone without the sticky bit (chmod 1770)")
        }
        if info.st_mode & S_IWGRP != 0 && !sticky {
            throw Problem.unsafe(path: root, reason: "group-writable without the sticky bit (chmod 1770)")
        }
    }

    /// One file in the spool.
    struct File: Sendable, Hashable {
        /// The service directory's name ("" for the root itself).
        var service: String
        var name: String
        var size: UInt64
        var modifiedNanoseconds: Int64
        var inode: UInt64

        init(service: String, name: String, size: UInt64, modifiedNanoseconds: Int64, inode: UInt64) {
            self.service = service
            self.name = name
            self.size = size
            self.modifiedNanoseconds = modifiedNanoseconds
            self.inode = inode
        }
    }

    func directory(of service: String) -> String {
        service.isEmpty ? root : root + "/" + service
    }

    func path(of file: File) -> String {
        directory(of: file.service) + "/" + file.name
    }

    /// What a scan found.
    struct Scan: Sendable {
        var services: [String] = []
        var reports: [File] = []
        var heartbeats: [File] = []
        /// Temporary files of interrupted writes (`.hang-*.tmp`).
        var temporaries: [File] = []
        /// Thread dumps' answers (`.dump-*.json`, `.dump-*.refused`): a reader that died left them.
        var dumpAnswers: [File] = []
        /// Service directories, and entries named like the agent's files, left alone, with why:
        /// never read, rewritten or deleted.
        var skipped: [(path: String, reason: String)] = []
    }

    /// Lists the root and every service directory in it (not following symlinks); with `only`,
    /// just those service directories (and the root's own files). An entry named like a report, a
    /// heartbeat or a temporary file is skipped unless it is a regular file with one name, owned by
    /// its directory's owner, this user or root, and not writable by everyone.
    func scan(only: Set<String>? = nil, effectiveUser: uid_t = geteuid()) throws -> Scan {
        var result = Scan()
        guard let rootInfo = DirectoryEntries.status(of: root, ifType: S_IFDIR) else {
            throw Problem.unsafe(path: root, reason: "no longer a directory")
        }
        var directories: [(service: String, owner: uid_t)] = [("", rootInfo.st_uid)]
        for name in try DirectoryEntries.names(in: root).sorted() where !name.hasPrefix(".") {
            if let only, !only.contains(name) { continue }
            let path = root + "/" + name
            guard let info = DirectoryEntries.status(of: path, ifType: S_IFDIR) else { continue }
            if info.st_mode & S_IWOTH != 0 && info.st_mode & S_ISVTX == 0 {
                result.skipped.append((path, "a service directory writable by everyone"))
                continue
            }
            directories.append((name, info.st_uid))
        }
        for (service, owner) in directories {
            if !service.isEmpty { result.services.append(service) }
            // A directory that vanished or became unreadable since: the others still count.
            guard let names = try? DirectoryEntries.names(in: directory(of: service)) else { continue }
            for name in names {
                let kind: WritableKeyPath<Scan, [File]>
                if ReportStore.isReportFileName(name) {
                    kind = \.reports
                } else if MonitorHeartbeat.pid(fromFileName: name) != nil {
                    kind = \.heartbeats
                } else if name.hasPrefix(ReportStore.temporaryPrefix) && name.hasSuffix(ReportStore.temporarySuffix) {
                    kind = \.temporaries
                } else if ReportStore.isDumpAnswerName(name) {
                    kind = \.dumpAnswers
                } else {
                    continue
                }
                let path = directory(of: service) + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                if let reason = Self.refusal(info, directoryOwner: owner, effectiveUser: effectiveUser) {
                    result.skipped.append((path, reason))
                    continue
                }
                result[keyPath: kind].append(
                    File(
                        service: service, name: name, size: UInt64(info.st_size),
                        modifiedNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                        inode: UInt64(info.st_ino)))
            }
        }
        return result
    }

    /// Why the agent leaves an entry named like one of its files alone, or nil if it may use it.
    static func refusal(_ info: stat, directoryOwner: uid_t, effectiveUser: uid_t) -> String? {
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFLNK: return "a symlink"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR, S_IFBLK: return "a device node"
        case S_IFDIR: return "a directory"
        default: return "not a regular file"
        }
        if info.st_nlink > 1 { return "a hard link (\(info.st_nlink) names for one file)" }
        if info.st_uid != directoryOwner && info.st_uid != effectiveUser && info.st_uid != 0 {
            return "owned by uid \(info.st_uid), not by its directory's owner (uid \(directoryOwner))"
        }
        if info.st_mode & S_IWOTH != 0 { return "writable by everyone" }
        return nil
    }

    /// The file `name` in `service`'s directory as it is now, if it is a regular file.
    func file(service: String, name: String) -> File? {
        guard let info = DirectoryEntries.status(of: directory(of: service) + "/" + name, ifType: S_IFREG) else { return nil }
        return File(
            service: service, name: name, size: UInt64(info.st_size),
            modifiedNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            inode: UInt64(info.st_ino))
    }

    /// Why a removal did not happen.
    enum RemovalError: Error, Equatable, CustomStringConvertible {
        case notRecognised(String)
        case changed(String)
        case failed(path: String, reason: String)

        var description: String {
            switch self {
            case .notRecognised(let path): return "\(path): not a file the agent manages; left alone"
            case .changed(let path): return "\(path): replaced since it was scanned; left for the next scan"
            case .failed(let path, let reason): return "\(path): \(reason)"
            }
        }
    }

    /// Deletes `file` if it is still the regular file that was scanned (same inode), opening the
    /// directories relative to the root without following symlinks.
    func remove(_ file: File) throws {
        let path = self.path(of: file)
        let recognised =
            ReportStore.isReportFileName(file.name) || MonitorHeartbeat.pid(fromFileName: file.name) != nil
            || (file.name.hasPrefix(ReportStore.temporaryPrefix) && file.name.hasSuffix(ReportStore.temporarySuffix))
            || ReportStore.isDumpAnswerName(file.name)
        guard recognised, !file.name.contains("/"), !file.service.contains("/"), file.service != "..", file.service != "." else {
            throw RemovalError.notRecognised(path)
        }
        let root = root
        func failed(_ error: SystemCallError) -> RemovalError { .failed(path: path, reason: error.reason) }
        let rootFD: Int32
        switch SystemCall.result("open", path: root, { open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }) {
        case .success(let fd): rootFD = fd
        case .failure(let error): throw failed(error)
        }
        defer { close(rootFD) }
        var directoryFD = rootFD
        if !file.service.isEmpty {
            switch SystemCall.result("openat", path: path, { openat(rootFD, file.service, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }) {
            case .success(let fd): directoryFD = fd
            case .failure(let error): throw failed(error)
            }
        }
        defer { if directoryFD != rootFD { close(directoryFD) } }
        var info = stat()
        if case .failure(let error) = SystemCall.result("fstatat", path: path, { fstatat(directoryFD, file.name, &info, AT_SYMLINK_NOFOLLOW) }) {
            if error.code == ENOENT { return }
            throw failed(error)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw RemovalError.notRecognised(path) }
        guard UInt64(info.st_ino) == file.inode else { throw RemovalError.changed(path) }
        if case .failure(let error) = SystemCall.result("unlinkat", path: path, { unlinkat(directoryFD, file.name, 0) }), error.code != ENOENT {
            throw failed(error)
        }
    }

    /// Bytes available to unprivileged users on the root's file system.
    func freeBytes() -> UInt64? {
        var info = statvfs()
        guard statvfs(root, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }
}
