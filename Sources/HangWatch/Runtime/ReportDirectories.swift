import Foundation
import HangWatchReport
import Synchronization

/// The report directories the monitors of a process write to (`ProcessRuntime.directories`): one
/// `SharedReportDirectory` each, found by the directory's real path, kept while a monitor's start
/// holds it. A start whose directory settings differ from those of the monitors already writing
/// there is refused (`HangMonitorError.invalidConfiguration`, naming the setting).
final class ReportDirectories: Sendable {
    private struct Entry {
        var directory: SharedReportDirectory
        var holders: Int
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// The directory at `path` (its real path), held for one more start: the one already open, or
    /// `make`'s, opened. Throws when `settings` differ from the open directory's.
    func hold(
        _ path: String, settings: SharedReportDirectory.Settings, in runtime: ProcessRuntime,
        make: () -> SharedReportDirectory
    ) throws -> SharedReportDirectory {
        try entries.withLock { open in
            if var entry = open[path] {
                if let difference = entry.directory.settings.firstDifference(from: settings) {
                    throw HangMonitorError.invalidConfiguration(
                        key: difference.key, value: difference.theirs,
                        reason: "another monitor of this process writes to \(path) with \(difference.key) \(difference.value); "
                            + "the monitors of one report directory share its writer and heartbeat, so they must agree "
                            + "(give this monitor the same \(difference.key), or a directory of its own)")
                }
                entry.holders += 1
                open[path] = entry
                return entry.directory
            }
            let directory = make()
            directory.open(runtime)
            open[path] = Entry(directory: directory, holders: 1)
            return directory
        }
    }

    /// One start lets go of `directory`; the last closes it (under the lock: a start of the same
    /// directory meanwhile waits, and then opens it anew, with a heartbeat file of its own).
    func release(_ directory: SharedReportDirectory, in runtime: ProcessRuntime) {
        entries.withLock { open in
            guard let path = open.first(where: { $0.value.directory === directory })?.key, var entry = open[path] else { return }
            entry.holders -= 1
            guard entry.holders == 0 else {
                open[path] = entry
                return
            }
            open[path] = nil
            directory.close(runtime)
        }
    }

    /// The directory a configured path names: its real path once it exists (so two spellings of
    /// one directory share one writer and one heartbeat).
    static func key(of path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
