import Foundation
import HangWatchReport
import HangWatchTestSupport

/// Reports of releases of a service, for `diff` and `top --by version`: each hang is at a `site`
/// (a function of the service, named in the report, so it groups by names), in a `version`, of a
/// `build` (another build moves every address, so the address signature changes and the names
/// stay).
enum Releases {
    /// A report of a hang at `site` in `version` (nil: a report without one); `number` makes its id
    /// and start (later numbers later) unique.
    static func report(site: String, version: String?, number: Int, service: String = "billing", build: Int = 1) -> HangReport {
        var report = ReportFixtures.report(id: String(format: "20261122T01%04d123Z-\(service)-42-\(number)", number), service: service)
        report.startedAt = report.startedAt.addingTimeInterval(Double(number))
        report.detectedAt = report.startedAt.addingTimeInterval(0.25)
        report.endedAt = report.startedAt.addingTimeInterval(report.durationMs / 1000)
        // Every app frame named: grouped by names.
        report.frames[0].symbol = "read"
        report.frames[1].symbol = "billing.\(site)() -> ()"
        report.frames[2].symbol = "billing.serve() -> ()"
        if build != 1 {
            for index in report.frames.indices {
                report.frames[index].offset = "0x\(String(build, radix: 16))\(index)00"
                report.frames[index].address = "0x55550000\(String(build, radix: 16))\(index)00"
            }
            report.signature = String(format: "%016llx", UInt64(build) &* 0x9e37_79b9_7f4a_7c15)
        }
        report.heaviestStack?.frames = report.frames
        report.refreshNameSignature()
        report.serviceVersion = version.map { ServiceVersion(version: $0, source: .environment) }
        return report
    }

    /// Writes `count` hangs at `site` of `version` into `directory` (created if need be), numbered
    /// from `first`; returns the next free number.
    @discardableResult
    static func write(
        _ count: Int, at site: String, version: String?, into directory: String, from first: Int, service: String = "billing", build: Int = 1
    ) throws -> Int {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let store = ReportStore(directory: directory)
        for number in first..<first + count {
            _ = try store.write(report(site: site, version: version, number: number, service: service, build: build))
        }
        return first + count
    }

    /// Writes the agent's monitored-time file into `directory`: `hours` monitored per version.
    static func writeMonitoredTime(_ hours: [String: Double], into directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let time = MonitoredTime(versions: hours.mapValues { MonitoredTime.Entry(seconds: $0 * 3600, lastSeen: now) })
        try time.encoded().write(to: URL(fileURLWithPath: directory + "/" + MonitoredTime.fileName))
    }
}
