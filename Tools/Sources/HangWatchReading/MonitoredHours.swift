#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HangWatchRendering
@_spi(Internal) import HangWatchReport

/// The monitored time behind the rates of one view (`top --by version`, `diff`): the agent's
/// `.monitored-time.json` files under the report directory, read once; a damaged one is warned
/// about and makes the time unknown. With `--since` or `--until` no time is used: it is a running
/// total, which no window of hangs can be divided by.
package struct MonitoredHours {
    package let files: MonitoredTimeFiles?
    package let services: Set<String>
    /// The hangs in view.
    package let summaries: [ReportSummary]

    /// - Parameters:
    ///   - library: where the agent's monitored-time files are (beside the reports).
    ///   - services: the services in view (all when empty).
    ///   - windowed: a time window was asked for (`--since`, `--until`), or some of a service's
    ///     pods or containers (`--pod`, `--namespace`, `--container`): no rate is shown then.
    ///   - summaries: the hangs in view.
    package init(library: ReportLibrary, services: [String], windowed: Bool, summaries: [ReportSummary]) {
        self.services = Set(services)
        self.summaries = summaries
        guard !windowed else {
            files = nil
            return
        }
        let files = MonitoredTimeFiles.read(library.catalog)
        for (path, reason) in files.damaged {
            Terminal.warn("hangwatch: warning: ignored \(path): \(reason); monitored time is unknown")
        }
        self.files = files
    }

    /// Whether a time window was asked for (then no rate is shown).
    package var windowed: Bool { files == nil }

    /// Monitored seconds of `version` (nil: reports without one) over the services in view; nil
    /// when unknown.
    package func seconds(of version: String?) -> Double? {
        files?.seconds(of: version, services: services, summaries: summaries)
    }

    /// `2.5 monitored hours`, `120 monitored hours`, `0.04 monitored hours`.
    package static func hoursText(_ seconds: Double) -> String {
        let hours = seconds / 3600
        let number = hours >= 100 ? Text.whole(hours) : hours >= 1 ? String(printf: "%.1f", hours) : String(printf: "%.2f", hours)
        return number + " monitored hour" + (number == "1.0" ? "" : "s")
    }

    /// A rate per hour: `12`, `1.5`, `0.25`, `0.004`.
    package static func rateText(_ perHour: Double) -> String {
        if perHour >= 10 { return Text.whole(perHour) }
        if perHour >= 1 { return String(printf: "%.1f", perHour) }
        if perHour == 0 { return "0" }
        return String(printf: "%.2g", perHour)
    }
}
