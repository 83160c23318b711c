#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Reading a directory without following symlinks: shared by the store (its own directory) and
/// the catalog (a directory and its service subdirectories).
public enum DirectoryEntries {
    /// The names in `directory`, without `.` and `..`. A name that is not UTF-8 cannot be a report
    /// this package wrote, and is left out.
    public static func names(in directory: String) throws -> [String] {
        let handle: OpaquePointer
        do {
            handle = try SystemCall.check("opendir", path: directory) { opendir(directory) }
        } catch {
            throw ReportStoreError.listFailed(path: directory, reason: error.reason)
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            if let name = name(of: entry), name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// The name in a `readdir` entry. Read up to its terminating zero only: the entry is as long as
    /// its name (`d_reclen`), not `sizeof(struct dirent)`, so copying the whole `d_name` array reads
    /// past the last entry of the directory stream's buffer.
    static func name(of entry: UnsafePointer<dirent>) -> String? {
        let offset = MemoryLayout<dirent>.offset(of: \.d_name)!
        return String(validatingCString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
    }

    /// The status of `path` itself (a symlink is not followed), if it is of `type` (`S_IFREG`, `S_IFDIR`).
    public static func status(of path: String, ifType type: mode_t) -> stat? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == type else { return nil }
        return info
    }
}
