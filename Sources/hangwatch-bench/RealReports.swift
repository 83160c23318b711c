import Foundation
import HangWatchReport

/// Real reports of this binary, as the monitor writes them (raw frames): eight hangs of 300 ms at
/// different depths, so there are several culprits to group. Figures 9 and 21 copy them.
enum RealReports {
    static func make(name: String) throws -> [HangReport] {
        let loop = BenchLoop()
        let variant = try HangWatchVariant(threshold: .milliseconds(100), name: name)
        defer { variant.removeReports() }
        variant.attach(to: loop)
        let gaps = GapRecorder(thresholdNanoseconds: 1_000_000_000)
        for depth in 20..<28 {
            loop.sync { _ = hangAtDepth(depth, milliseconds: 300, gaps: gaps) }
        }
        variant.detach()
        loop.stop()
        let reports = variant.reports()
        guard reports.count >= 4 else { throw BenchFailure("the monitor wrote \(reports.count) reports, expected 8") }
        return reports
    }

    /// A copy of `report` as service `service` wrote it at `date`, under a fresh id.
    static func copy(_ report: HangReport, service: String, at date: Date, index: Int) -> HangReport {
        var copy = report
        copy.service = service
        copy.startedAt = date
        copy.id = ReportTimestamp.compact(date) + "-\(service)-\(1000 + index % 7)-\(index)"
        return copy
    }
}
