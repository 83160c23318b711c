#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchRendering
@_spi(Internal) import HangWatchReport
import HangWatchSymbolication

/// The reports a command works on: scanning (through the index), resolving `id|path|latest`,
/// reading and symbolicating; every failure a `CommandFailure` in the user's words.
package struct ReportLibrary {
    package let directory: String
    /// Where the directory came from, for the error when it is missing.
    package let origin: ReportDirectoryChoice.Origin
    package let terminal: Terminal
    package let symbolicator: Symbolicator?

    package init(directory: String, origin: ReportDirectoryChoice.Origin = .option, terminal: Terminal, symbolicator: Symbolicator?) {
        self.directory = directory
        self.origin = origin
        self.terminal = terminal
        self.symbolicator = symbolicator
    }

    package var catalog: ReportCatalog {
        // Summaries made with and without names are cached apart.
        ReportCatalog(directory: directory, indexPath: ReportCatalog.defaultIndexPath.map { $0 + (symbolicator == nil ? "/raw" : "/named") })
    }

    /// Summaries matching `filter`, newest first; unreadable files are warned about, one line each.
    package func summaries(_ filter: ReportFilter) throws -> [ReportSummary] {
        try checkDirectory()
        let progress = Terminal.Progress("reading reports", terminal: terminal)
        var enrich: (@Sendable (inout HangReport) -> Void)?
        if let symbolicator {
            enrich = { report in symbolicator.symbolicate(&report) }
        }
        let scan: (summaries: [ReportSummary], problems: [ReportCatalog.Problem])
        do {
            scan = try catalog.summaries(enrich: enrich, progress: { done, total in progress.update(done, total) })
        } catch {
            progress.finish()
            throw CommandFailure(message: ErrorText.message(for: error), exitCode: Exit.badInput)
        }
        progress.finish()
        for problem in scan.problems {
            Terminal.warn("hangwatch: warning: \(problem)")
        }
        let matching = scan.summaries.filter(filter.matches).sorted { ($0.startedAt, $0.path) > ($1.startedAt, $1.path) }
        // Nothing to show, and reports this user may not read: that is the answer, not "no hangs".
        let denied = scan.problems.filter(\.permissionDenied)
        if matching.isEmpty, let first = denied.first {
            throw CommandFailure(message: Self.permissionMessage(denied: denied.count, example: first.path, in: directory), exitCode: Exit.badInput)
        }
        // A label's value asked in part (`route=/checkout` for `GET /checkout`): say how to ask.
        if matching.isEmpty, let hint = filter.labelHint(scan.summaries) {
            throw CommandFailure(message: "no hangs match: \(hint)", exitCode: Exit.nothingMatched)
        }
        return matching
    }

    /// What to say when reports are there but this user may not read them.
    package static func permissionMessage(denied: Int, example: String, in directory: String) -> String {
        var owner = ""
        var info = stat()
        if stat(example, &info) == 0 {
            let user = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "\(info.st_uid)"
            let group = getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) } ?? "\(info.st_gid)"
            owner = " (owned by \(user):\(group), mode \(String(info.st_mode & 0o777, radix: 8)))"
        }
        let count = denied == 1 ? "1 report" : "\(denied) reports"
        return "permission denied: cannot read \(count) in \(directory)\(owner); "
            + "read them as their owner, as a member of their group (the agent's spool: hangwatch), or with sudo"
    }

    /// The report directory exists, is a directory and can be listed; else a failure that names
    /// it, says that it does not exist (or why it cannot be read) and where it came from, and what
    /// to do.
    package func checkDirectory() throws {
        var info = stat()
        if case .failure(let error) = SystemCall.result("stat", path: directory, { stat(directory, &info) }) {
            throw CommandFailure(message: ReportDirectoryChoice.missing(directory, origin: origin, code: error.code), exitCode: Exit.badInput)
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw CommandFailure(
                message: "\(directory) is a file, not a directory: --dir takes the directory that holds the reports (show and validate take a file)",
                exitCode: Exit.badInput)
        }
        if let code = Self.listingError(directory) {
            throw CommandFailure(message: ErrorText.cannot(.read, directory, code: code, option: "--dir"), exitCode: Exit.badInput)
        }
    }

    /// Why `directory` cannot be listed (`EACCES`), or nil when it can.
    package static func listingError(_ directory: String) -> Int32? {
        switch SystemCall.result("opendir", path: directory, { opendir(directory).map { closedir($0) } ?? -1 }) {
        case .success: return nil
        case .failure(let error): return error.code
        }
    }

    /// The path of report `reference`: `latest`, a file path, a report id, or a unique id prefix.
    package func resolve(_ reference: String) throws -> String {
        if reference == "latest" {
            guard let newest = try summaries(ReportFilter()).first else {
                throw CommandFailure(message: "no reports in \(directory)", exitCode: Exit.nothingMatched)
            }
            return newest.path
        }
        if reference.contains("/") || reference.hasSuffix(ReportStore.fileSuffix) {
            return reference
        }
        let files = (try? catalog.files()) ?? []
        let matches = files.filter { entry in
            let name = PathText.lastComponent(of: entry.path)
            return name.hasPrefix(ReportStore.filePrefix + reference)
        }
        guard let first = matches.first else {
            throw CommandFailure(message: "no report \(reference) in \(directory)", exitCode: Exit.nothingMatched)
        }
        guard matches.count == 1 else {
            throw CommandFailure(message: "\(reference) matches \(matches.count) reports; give more of the id", exitCode: Exit.usage)
        }
        return first.path
    }

    /// The report at `path`, symbolicated unless told not to.
    package func load(_ path: String) throws -> HangReport {
        var report: HangReport
        do {
            report = try ReportReader().read(path: path)
        } catch {
            throw CommandFailure(message: ErrorText.message(for: error), exitCode: Exit.badInput)
        }
        if let symbolicator, report.frames.contains(where: { $0.symbol == nil }) {
            symbolicator.symbolicate(&report)
        }
        return report
    }

    /// Full reports for summaries, skipping (with a warning) any that vanished or changed into
    /// something unreadable since.
    package func load(_ summaries: [ReportSummary]) -> [HangReport] {
        let progress = Terminal.Progress("reading reports", terminal: terminal)
        defer { progress.finish() }
        return summaries.enumerated().compactMap { index, summary in
            progress.update(index + 1, summaries.count)
            do {
                return try load(summary.path)
            } catch {
                Terminal.warn("hangwatch: warning: skipped \(summary.path): \(ErrorText.message(for: error))")
                return nil
            }
        }
    }
}
