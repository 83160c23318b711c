#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How long live monitors watched one service, per version of it: the denominator of a hang rate
/// (hangs per monitored hour). The agent adds to it from the heartbeats it reads
/// (`hangwatch_monitored_seconds_total` counts the same time since the agent started) and keeps
/// the running total in `.monitored-time.json` in the service's report directory; `hangwatch diff`
/// and `hangwatch top --by version` read it there.
///
/// A second counts when a monitor's watchdog ticked through it in state idle, watching or
/// recording: not while the monitor was stopped or paused (a debugger), nor while its watchdog
/// was silent.
public struct MonitoredTime: Codable, Sendable, Equatable {
    public static let fileName = ".monitored-time.json"
    public static let currentSchema = "hangwatch.monitored-time/1"
    /// The key of time from monitors that published no version.
    public static let unversioned = "unversioned"
    /// At most this many versions are kept in one file: when a new one would pass it, the one
    /// seen longest ago goes.
    public static let maxVersions = 64

    public struct Entry: Codable, Sendable, Equatable {
        public var seconds: Double
        /// When a monitor of this version was last seen watching.
        public var lastSeen: Date
        public init(seconds: Double, lastSeen: Date) {
            self.seconds = seconds
            self.lastSeen = lastSeen
        }
    }

    public var schema: String
    /// Seconds watched, by version (`ServiceVersion.version`, or `unversioned`).
    public var versions: [String: Entry]

    public init(versions: [String: Entry] = [:]) {
        schema = Self.currentSchema
        self.versions = versions
    }

    /// Monitored seconds of `version`, 0 when none were recorded.
    public func seconds(of version: String) -> Double { versions[version]?.seconds ?? 0 }

    /// Adds `seconds` (finite and positive, else nothing) to `version`, seen at `now`; keeps at most
    /// `maxVersions` versions.
    public mutating func add(_ seconds: Double, to version: String, at now: Date) {
        guard seconds.isFinite, seconds > 0 else { return }
        var entry = versions[version] ?? Entry(seconds: 0, lastSeen: now)
        entry.seconds += seconds
        entry.lastSeen = max(entry.lastSeen, now)
        versions[version] = entry
        while versions.count > Self.maxVersions, let oldest = versions.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
            versions[oldest] = nil
        }
    }

    /// Reads the file's bytes; nil when they are not such a file (a reader then knows no time,
    /// never a wrong one). Negative or non-finite seconds are refused the same way.
    public static func decode(_ data: Data) -> MonitoredTime? {
        guard let time = try? HangReport.makeDecoder().decode(MonitoredTime.self, from: data),
            time.schema == currentSchema,
            time.versions.values.allSatisfy({ $0.seconds.isFinite && $0.seconds >= 0 })
        else { return nil }
        return time
    }

    public func encoded() throws -> Data { try HangReport.makeEncoder().encode(self) }
}
