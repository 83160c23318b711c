#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// The monitored time the agent keeps under a report directory (`MonitoredTime.fileName` in the
/// directory and in each service directory), and the one rule by which it becomes the denominator
/// of a rate (`seconds(of:services:summaries:)`): a rate is shown only when all of the time behind
/// it is known; otherwise it is unknown, never a guess.
public struct MonitoredTimeFiles: Sendable, Equatable {
    /// What one directory's file held.
    public enum State: Sendable, Equatable {
        /// No file: nothing counted this directory's time.
        case missing
        /// A file that could not be used (unreadable, not such a file, negative seconds): why.
        case damaged(reason: String)
        case read(MonitoredTime)
    }

    public struct Directory: Sendable, Equatable {
        public var path: String
        public var state: State

        public init(path: String, state: State) {
            self.path = path
            self.state = state
        }

        /// The service it holds: its name (the agent names service directories after the service).
        public var service: String { PathText.lastComponent(of: path) }

        public var filePath: String { path + "/" + MonitoredTime.fileName }
    }

    /// The directory given first, then its service directories.
    public var directories: [Directory]

    public init(directories: [Directory]) {
        self.directories = directories
    }

    /// At most this many bytes are read of one file (64 versions take a few KiB).
    public static let maxBytes: UInt64 = 1 << 20

    /// The files in `catalog`'s directory and its service directories. A directory that cannot be
    /// listed counts as none.
    public static func read(_ catalog: ReportCatalog) -> MonitoredTimeFiles {
        let paths = (try? catalog.directories()) ?? [catalog.directory]
        return MonitoredTimeFiles(directories: paths.map { Directory(path: $0, state: state(ofFileIn: $0)) })
    }

    /// What the file in `directory` holds. A file that is there but is not a regular file, or that
    /// cannot be read or decoded, is damaged.
    static func state(ofFileIn directory: String) -> State {
        let path = directory + "/" + MonitoredTime.fileName
        let data: Data
        do {
            data = try ReportReader(maxBytes: maxBytes).readData(path: path)
        } catch ReportReadError.notFound {
            return .missing
        } catch let error as ReportReadError {
            // The reader's words begin with the path, which the warning gives already.
            return .damaged(reason: "\(error)".replacing(path + ": ", with: ""))
        } catch {
            return .damaged(reason: "\(error)")
        }
        guard let time = MonitoredTime.decode(data) else {
            return .damaged(reason: "not a monitored-time file (\(MonitoredTime.currentSchema)) with finite, non-negative seconds")
        }
        return .read(time)
    }

    /// The directories whose file could not be used, with why.
    public var damaged: [(path: String, reason: String)] {
        directories.compactMap { directory in
            if case .damaged(let reason) = directory.state { return (directory.filePath, reason) }
            return nil
        }
    }

    /// Monitored seconds of `version` (nil: the reports without one, whose time is kept as
    /// `MonitoredTime.unversioned`), summed over the directories in view; nil when unknown.
    ///
    /// In view: every directory when `services` is empty; else the directories named after one of
    /// `services`, and any that holds one of `summaries` (the hangs in view). The time is unknown
    /// when a directory in view has a damaged file (it may have held any version's time), when a
    /// directory holding hangs of `version` in view has no file or one without that version (their
    /// time was not counted), or when the sum is not positive.
    public func seconds(of version: String?, services: Set<String>, summaries: [ReportSummary]) -> Double? {
        let holding = Set(summaries.map { PathText.parent(of: $0.path) })
        let holdingVersion = Set(summaries.filter { $0.serviceVersion == version }.map { PathText.parent(of: $0.path) })
        let key = version ?? MonitoredTime.unversioned
        var total = 0.0
        for directory in directories where services.isEmpty || services.contains(directory.service) || holding.contains(directory.path) {
            switch directory.state {
            case .damaged:
                return nil
            case .missing:
                if holdingVersion.contains(directory.path) { return nil }
            case .read(let time):
                guard let entry = time.versions[key] else {
                    if holdingVersion.contains(directory.path) { return nil }
                    continue
                }
                total += entry.seconds
            }
        }
        return total.isFinite && total > 0 ? total : nil
    }

    /// Hangs per monitored hour: `count` over `seconds` in hours; nil when the time is unknown.
    public static func perHour(_ count: Int, seconds: Double?) -> Double? {
        guard let seconds, seconds > 0 else { return nil }
        let rate = Double(count) / (seconds / 3600)
        return rate.isFinite ? rate : nil
    }
}
