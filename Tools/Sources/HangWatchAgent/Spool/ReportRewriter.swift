import Foundation
import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// Rewrites a report in place, atomically, only if the file is still the one that was read.
struct ReportRewriter {
    let spool: Spool

    enum Failure: Error, CustomStringConvertible {
        case changed(String)
        case renamed(String)
        var description: String {
            switch self {
            case .changed(let path): return "\(path): changed while the agent worked on it; left as it is"
            case .renamed(let path): return "\(path): the file name does not match the report id; left as it is"
            }
        }
    }

    func replace(_ file: Spool.File, with report: HangReport) throws {
        let path = spool.path(of: file)
        guard file.name == ReportStore.fileName(forID: report.id) else { throw Failure.renamed(path) }
        guard let info = DirectoryEntries.status(of: path, ifType: S_IFREG), UInt64(info.st_ino) == file.inode,
            UInt64(info.st_size) == file.size,
            Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec) == file.modifiedNanoseconds
        else { throw Failure.changed(path) }
        try ReportStore(directory: spool.directory(of: file.service), access: .sharedWithAgent).write(report)
    }
}
