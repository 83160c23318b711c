import ArgumentParser
import Foundation
import HangWatchReading
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

            Examples:
              hangwatch top --since 1d
              hangwatch top --service billing --limit 5
              hangwatch export --signature 1a2b3c4d --format folded > billing.folded
            """)

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var filters: FilterOptions
    @OptionGroup var reading: ReadingOptions

    @Option(name: .shortAndLong, help: "Show at most this many groups.")
    var limit: Int = 10

    @Option(help: "Frames of each representative stack to show.")
    var frames: Int = 4

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if limit < 1 { throw ValidationError("--limit must be at least 1") }
        if frames < 1 { throw ValidationError("--frames must be at least 1") }
    }

    struct GroupJSON: Encodable {
        var signature: String
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
        let groups = Array(HangGroup.group(summaries).prefix(limit))
        if json {
            let rows = groups.map {
                GroupJSON(
                    signature: $0.signature, count: $0.count, totalMs: $0.totalMs, p50Ms: $0.p50Ms, p95Ms: $0.p95Ms,
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
            lines.append(terminal.paint(head, .bold) + "  " + Text.fit(stats[index], statsWidth) + "  sig \(group.signature.prefix(8))")
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
