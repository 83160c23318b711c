#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// A directory `hangwatch dump` reads a monitor's files from, held open for the whole request: the
/// heartbeat and the answer are opened relative to it (`openat`, `O_NOFOLLOW`), so a directory
/// renamed or replaced on the path meanwhile changes nothing, and every file's facts come from
/// `fstat` on the descriptor that is then read (never `stat` then `open`). Gathers facts only:
/// `HeartbeatTrust` decides what to believe.
final class TrustedDirectory {
    let path: String
    let facts: HeartbeatTrust.DirectoryFacts
    private let fd: Int32

    private init(path: String, fd: Int32, facts: HeartbeatTrust.DirectoryFacts) {
        self.path = path
        self.fd = fd
        self.facts = facts
    }

    deinit { close(fd) }

    /// What opening a directory found.
    enum Opened {
        case directory(TrustedDirectory)
        case absent
        /// A symlink, file or other entry where a directory was looked for (never followed).
        case notADirectory(HeartbeatTrust.FileKind)
        case failed(SystemCallError)
    }

    /// The report directory the user named (a symlink there is followed: the user chose it).
    static func open(root: String) -> Opened {
        open(path: root) { Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
    }

    /// The entry `name` of this directory, as a directory, never through a symlink.
    func directory(_ name: String) -> Opened {
        let result = Self.open(path: path + "/" + name) { openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        guard case .failed(let error) = result, error.code == ELOOP || error.code == ENOTDIR else { return result }
        var info = stat()
        guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return result }
        return .notADirectory(Self.kind(info.st_mode))
    }

    private static func open(path: String, _ call: () -> Int32) -> Opened {
        switch SystemCall.result("open", path: path, call) {
        case .failure(let error):
            return error.code == ENOENT ? .absent : .failed(error)
        case .success(let fd):
            var info = stat()
            if case .failure(let error) = SystemCall.result("fstat", path: path, { fstat(fd, &info) }) {
                close(fd)
                return .failed(error)
            }
            return .directory(
                TrustedDirectory(path: path, fd: fd, facts: .init(kind: kind(info.st_mode), uid: info.st_uid, mode: info.st_mode & 0o7777)))
        }
    }

    /// The names in this directory (nil when it cannot be listed).
    func names() -> [String]? {
        try? FileManager.default.contentsOfDirectory(atPath: path)
    }

    /// Whether `path` (relative to this directory, symlinks followed) exists: only to say that a
    /// heartbeat was there behind a symlink that is refused.
    func exists(followingSymlinks relative: String) -> Bool {
        faccessat(fd, relative, F_OK, 0) == 0
    }

    /// What opening a file found.
    enum Entry {
        case absent
        /// `O_NOFOLLOW` refused it: a symlink, never followed.
        case symlink
        case failed(SystemCallError)
        case file(File)
    }

    /// `name` in this directory, opened for reading: never through a symlink, never blocking on a
    /// FIFO.
    func open(_ name: String) -> Entry {
        let path = self.path + "/" + name
        switch SystemCall.result("open", path: path, { openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }) {
        case .failure(let error) where error.code == ENOENT: return .absent
        case .failure(let error) where error.code == ELOOP: return .symlink
        case .failure(let error): return .failed(error)
        case .success(let fd):
            var info = stat()
            if case .failure(let error) = SystemCall.result("fstat", path: path, { fstat(fd, &info) }) {
                close(fd)
                return .failed(error)
            }
            let facts = HeartbeatTrust.FileFacts(
                kind: Self.kind(info.st_mode), links: UInt64(info.st_nlink), uid: info.st_uid, mode: info.st_mode & 0o7777,
                identity: FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
            return .file(File(path: path, fd: fd, facts: facts, size: UInt64(max(0, info.st_size))))
        }
    }

    /// Removes `name` from this directory (an answer once read).
    func remove(_ name: String) {
        unlinkat(fd, name, 0)
    }

    static func kind(_ mode: mode_t) -> HeartbeatTrust.FileKind {
        switch mode & S_IFMT {
        case S_IFREG: .regular
        case S_IFDIR: .directory
        case S_IFLNK: .symlink
        default: .other
        }
    }

    /// An open file of the directory, closed when released.
    final class File {
        let path: String
        let facts: HeartbeatTrust.FileFacts
        /// Its size when opened.
        let size: UInt64
        private let fd: Int32

        init(path: String, fd: Int32, facts: HeartbeatTrust.FileFacts, size: UInt64) {
            self.path = path
            self.fd = fd
            self.facts = facts
            self.size = size
        }

        deinit { close(fd) }

        /// A consistent copy of the heartbeat page (`MonitorHeartbeat.read(descriptor:path:)`).
        func heartbeat() -> Result<MonitorHeartbeat, HeartbeatTrust.Unreadable> {
            do {
                return .success(try MonitorHeartbeat.read(descriptor: fd, path: path))
            } catch let error as MonitorHeartbeat.ReadError {
                switch error {
                case .unreadable(_, let reason), .malformed(_, let reason): return .failure(.init(reason: reason))
                case .busy: return .failure(.init(reason: "always being updated; no consistent read"))
                }
            } catch {
                return .failure(.init(reason: "\(error)"))
            }
        }

        /// The whole file, refused past `limit` bytes (by its size, before reading a byte) or when
        /// it grew while read (a monitor renames a whole answer into place, never appends).
        func contents(limit: UInt64) throws -> Data {
            guard size <= limit else { throw TooLarge(size: size, limit: limit) }
            var data = Data(count: Int(size) + 1)
            var total = 0
            try data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) throws in
                while total < buffer.count {
                    let count = try SystemCall.check("read", path: path) { read(fd, buffer.baseAddress! + total, buffer.count - total) }
                    if count == 0 { break }
                    total += count
                }
            }
            guard UInt64(total) <= size else { throw Grew() }
            return data.prefix(total)
        }

        /// A file past its limit.
        struct TooLarge: Error {
            var size: UInt64
            var limit: UInt64
        }

        /// A file that grew while it was read.
        struct Grew: Error {}
    }
}
