import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchReading
import HangWatchRendering
import HangWatchReport

/// `hangwatch top`: hangs grouped by culprit, most time lost first.
struct TopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Group hangs by signature (their culprit), most total time first: what to fix first.",
        usage: "hangwatch top [<options>]",
        discussion: """
            Each group: how many hangs, the time they took in all, their p50/p95/max duration, when \
            the first and last were seen, which services, and a representative stack.

            A signature is by function names when the report's frames are named (written into it, \
            or looked up from its binaries now): the same call path is one group in every build, \
            host and release. Without names it is by addresses (image offsets), which a rebuild \
            changes; each group says which: (names) or (addresses). --by KEY groups by the value \
            of a label instead (HangMonitor.withLabels): which routes, tenants, ... hang most.

            --by version groups by the service's release (the version in its reports; hangs of \
            monitors that wrote none are one group, version: none), with hangs per monitored hour \
            where the agent counted the time each version was watched (.monitored-time.json in the \
            service directories; not with --since or --until, as that time is a running total). \
            version is a reserved word: --by label:version groups by a label named version (and \
            label:KEY by any label).

            --by pod, container, namespace or node groups by where the service ran, as its reports \
            say (resource: the pod as NAMESPACE/NAME, the container by its id, else by its name in \
            its pod; hangs of reports that do not say are one group, pod: none). These are reserved \
            words too: label:pod for a label named pod.

            Examples:
              hangwatch top --since 1d
              hangwatch top --service billing --limit 5
              hangwatch top --by route
              hangwatch top --by version --service billing
              hangwatch top --by pod --namespace shop
              hangwatch export --signature 1a2b3c4d --format folded > billing.folded
            """)

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var filters: FilterOptions
    @OptionGroup var reading: ReadingOptions

    @Option(name: .shortAndLong, help: "Show at most this many groups.")
    var limit: Int = 10

    @Option(help: "Frames of each representative stack to show.")
    var frames: Int = 4

    @Option(
        name: .customLong("by"),
        help: ArgumentHelp(
            "Group by the value of this label instead of by signature; version: by the service's version; pod, container, namespace, node: by where it ran; label:KEY: by the label KEY (label:version for a label named version).",
            valueName: "label|version|pod|container|namespace|node|label:KEY"))
    var by: String?

    /// What `--by` asks for.
    enum Grouping: Equatable {
        case signature
        case label(String)
        case serviceVersion
        case workload(HangGroup.Workload)
    }

    /// `version`, `pod`, `container`, `namespace` and `node` are reserved; `label:KEY` is always a
    /// label; any other word is a label's key.
    static func grouping(_ by: String?) -> Grouping {
        guard let by else { return .signature }
        if by == "version" { return .serviceVersion }
        if let workload = HangGroup.Workload(rawValue: by) { return .workload(workload) }
        if by.hasPrefix("label:") { return .label(String(by.dropFirst("label:".count))) }
        return .label(by)
    }

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if limit < 1 { throw ValidationError("--limit must be at least 1") }
        if frames < 1 { throw ValidationError("--frames must be at least 1") }
        if case .label(let key) = Self.grouping(by), key.isEmpty {
            throw ValidationError("--by takes a label's key, such as route, label:KEY, version, pod, container, namespace or node")
        }
    }

    struct GroupJSON: Encodable {
        /// Empty for a group by label.
        var signature: String
        /// `names` or `addresses`; absent for a group by label.
        var signatureKind: HangReport.SignatureKind?
        /// For `--by`: the label and the members' value (absent: they do not carry it).
        var label: String?
        var value: String?
        /// For `--by version`: the members' version (absent: their reports have none), its monitored
        /// time over the services in view and the group's hangs per monitored hour (absent: unknown).
        var version: String?
        var monitoredSeconds: Double?
        var perMonitoredHour: Double?
        /// For `--by pod`, `container`, `namespace`, `node`: which (`by`), and the members' `value`
        /// (absent: their reports do not say).
        var by: String?
        var count: Int
        var totalMs, p50Ms, p95Ms, maxMs: Double
        var firstSeen, lastSeen: Date
        var services: [String]
        var representative: String
        var stack: [String]
    }

    func run() throws {
        let library = ReportLibrary(directory: directory, reading: reading)
        let summaries = try library.summaries(filters.filter())
        let all: [HangGroup]
        switch Self.grouping(by) {
        case .signature: all = HangGroup.group(summaries)
        case .label(let key): all = HangGroup.group(summaries, byLabel: key)
        case .serviceVersion: all = HangGroup.groupByServiceVersion(summaries)
        case .workload(let workload): all = HangGroup.group(summaries, by: workload)
        }
        let groups = Array(all.prefix(limit))
        // Monitored time, for the rates of groups by version.
        var seconds: [String?: Double] = [:]
        if !groups.isEmpty, Self.grouping(by) == .serviceVersion {
            let hours = MonitoredHours(library: library, services: filters.service, windowed: filters.narrowsMonitoredTime, summaries: summaries)
            for group in groups { seconds[group.serviceVersion] = hours.seconds(of: group.serviceVersion) }
        }
        if json {
            let rows = groups.map {
                GroupJSON(
                    signature: $0.signature, signatureKind: $0.signatureKind, label: $0.labelKey, value: $0.labelValue ?? $0.workloadValue,
                    version: $0.serviceVersion, monitoredSeconds: seconds[$0.serviceVersion],
                    perMonitoredHour: MonitoredTimeFiles.perHour($0.count, seconds: seconds[$0.serviceVersion]),
                    by: $0.workload?.rawValue, count: $0.count, totalMs: $0.totalMs, p50Ms: $0.p50Ms, p95Ms: $0.p95Ms,
                    maxMs: $0.maxMs, firstSeen: $0.firstSeen, lastSeen: $0.lastSeen, services: $0.services,
                    representative: $0.representative.id, stack: $0.representative.stack)
            }
            print(String(decoding: try HangReport.makeEncoder().encode(rows), as: UTF8.self))
        } else if !groups.isEmpty {
            print(render(groups, perHour: { MonitoredTimeFiles.perHour($0.count, seconds: seconds[$0.serviceVersion]) }, terminal: library.terminal))
        }
        if groups.isEmpty {
            Terminal.warn("hangwatch: no hangs match")
            throw ExitCode(Exit.nothingMatched.rawValue)
        }
    }

    /// What the group is: `sig 1a2b3c4d (names)`, `route=GET /checkout` (`route: none`),
    /// `version=1.5.0` (`version: none`), `pod=shop/billing-7d9f8-x2x` (`pod: none`), or
    /// `container=3f2a1b4c5d6e (app in shop/billing-7d9f8-x2x)`: a container's id cut to 12 digits,
    /// as docker and crictl show it, with its name and pod where the reports say them.
    static func key(_ group: HangGroup) -> String {
        if let workload = group.workload {
            guard let value = group.workloadValue else { return "\(workload.rawValue): none" }
            if workload == .container, let resource = group.representative.resource, let id = resource.containerID, value == id {
                let name = [resource.containerName, resource.pod.map { "in \($0)" }].compactMap { $0 }.joined(separator: " ")
                return Text.clip("container=\(id.prefix(12))" + (name.isEmpty ? "" : " (\(name))"), 60)
            }
            return Text.clip("\(workload.rawValue)=\(value)", 60)
        }
        if group.byServiceVersion {
            return Text.clip(group.serviceVersion.map { "version=\($0)" } ?? "version: none", 60)
        }
        if let key = group.labelKey {
            return Text.clip(group.labelValue.map { "\(key)=\($0)" } ?? "\(key): none", 60)
        }
        return "sig \(group.signature.prefix(8)) (\(group.signatureKind?.rawValue ?? "addresses"))"
    }

    /// Each column as wide as its widest entry; the terminal's width only cuts the services and
    /// the frames. `perHour`: a group's hangs per monitored hour, when known.
    func render(_ groups: [HangGroup], perHour: (HangGroup) -> Double? = { _ in nil }, terminal: Terminal) -> String {
        let width = terminal.width
        let heads = groups.map { "\($0.count) hang\($0.count == 1 ? "" : "s"), \(Text.duration($0.totalMs)) in all" }
        let ranks = groups.indices.map { "#\($0 + 1)" }
        let stats = groups.map { "p50 \(Text.duration($0.p50Ms))  p95 \(Text.duration($0.p95Ms))  max \(Text.duration($0.maxMs))" }
        let services = groups.map { $0.services.joined(separator: ", ") }
        let rankWidth = ranks.map(\.count).max() ?? 0
        let headWidth = heads.map(\.count).max() ?? 0
        let statsWidth = stats.map(\.count).max() ?? 0
        var lines: [String] = []
        for (index, group) in groups.enumerated() {
            let head = Text.fit(ranks[index], rankWidth) + "  " + Text.fit(heads[index], headWidth)
            let rate = perHour(group).map { " (\(MonitoredHours.rateText($0)) per monitored hour)" } ?? ""
            lines.append(terminal.paint(head, .bold) + "  " + Text.fit(stats[index], statsWidth) + "  " + Self.key(group) + rate)
            let seen = "first " + Text.time(group.firstSeen) + "  last " + Text.time(group.lastSeen) + " " + Text.zone(group.lastSeen)
            let servicesWidth = min(services.map(\.count).max() ?? 0, max(10, width - 4 - 2 - seen.count))
            lines.append("    " + Text.fit(services[index], servicesWidth) + "  " + seen)
            for frame in group.representative.stack.prefix(frames) {
                lines.append("      " + FrameNaming.fit(frame, width: width - 6))
            }
            lines.append("")
        }
        return lines.dropLast().joined(separator: "\n")
    }
}
