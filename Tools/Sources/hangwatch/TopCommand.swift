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

            Examples:
              hangwatch top --since 1d
              hangwatch top --service billing --limit 5
              hangwatch top --by route
              hangwatch export --signature 1a2b3c4d --format folded > billing.folded
            """)

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var filters: FilterOptions
    @OptionGroup var reading: ReadingOptions

    @Option(name: .shortAndLong, help: "Show at most this many groups.")
    var limit: Int = 10

    @Option(help: "Frames of each representative stack to show.")
    var frames: Int = 4

    @Option(name: .customLong("by"), help: ArgumentHelp("Group by the value of this label instead of by signature.", valueName: "label"))
    var byLabel: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if limit < 1 { throw ValidationError("--limit must be at least 1") }
        if frames < 1 { throw ValidationError("--frames must be at least 1") }
        if let byLabel, byLabel.isEmpty { throw ValidationError("--by takes a label's key, such as route") }
    }

    struct GroupJSON: Encodable {
        /// Empty for a group by label.
        var signature: String
        /// `names` or `addresses`; absent for a group by label.
        var signatureKind: HangReport.SignatureKind?
        /// For `--by`: the label and the members' value (absent: they do not carry it).
        var label: String?
        var value: String?
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
        let all = byLabel.map { HangGroup.group(summaries, byLabel: $0) } ?? HangGroup.group(summaries)
        let groups = Array(all.prefix(limit))
        if json {
            let rows = groups.map {
                GroupJSON(
                    signature: $0.signature, signatureKind: $0.signatureKind, label: $0.labelKey, value: $0.labelValue,
                    count: $0.count, totalMs: $0.totalMs, p50Ms: $0.p50Ms, p95Ms: $0.p95Ms,
                    maxMs: $0.maxMs, firstSeen: $0.firstSeen, lastSeen: $0.lastSeen, services: $0.services,
                    representative: $0.representative.id, stack: $0.representative.stack)
            }
            print(String(decoding: try HangReport.makeEncoder().encode(rows), as: UTF8.self))
        } else if !groups.isEmpty {
            print(render(groups, terminal: library.terminal))
        }
        if groups.isEmpty {
            Terminal.warn("hangwatch: no hangs match")
            throw ExitCode(Exit.nothingMatched.rawValue)
        }
    }

    /// What the group is: `sig 1a2b3c4d (names)`, or `route=GET /checkout` (`route: none`).
    static func key(_ group: HangGroup) -> String {
        if let key = group.labelKey {
            return Text.clip(group.labelValue.map { "\(key)=\($0)" } ?? "\(key): none", 60)
        }
        return "sig \(group.signature.prefix(8)) (\(group.signatureKind?.rawValue ?? "addresses"))"
    }

    /// Each column as wide as its widest entry; the terminal's width only cuts the services and
    /// the frames.
    func render(_ groups: [HangGroup], terminal: Terminal) -> String {
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
            lines.append(terminal.paint(head, .bold) + "  " + Text.fit(stats[index], statsWidth) + "  " + Self.key(group))
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
