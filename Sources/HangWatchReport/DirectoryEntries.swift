import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reading a directory without following symlinks: shared by the store (its own directory) and
/// the catalog (a directory and its service subdirectories).
public enum DirectoryEntries {
    /// The names in `directory`, without `.` and `..`. A name that is not UTF-8 cannot be a report
    /// this package wrote, and is left out.
    public static func names(in directory: String) throws -> [String] {
        guard let handle = opendir(directory) else {
            throw ReportStoreError.listFailed(path: directory, reason: String(cString: strerror(errno)))
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String? in
                String(validating: Array(raw.prefix(while: { $0 != 0 })), as: UTF8.self)
            }
            if let name, name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// The status of `path` itself (a symlink is not followed), if it is of `type` (`S_IFREG`, `S_IFDIR`).
    public static func status(of path: String, ifType type: mode_t) -> stat? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == type else { return nil }
        return info
    }
}
