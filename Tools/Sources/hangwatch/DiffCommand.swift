import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HangWatchReading
import HangWatchRendering
import HangWatchReport

/// `hangwatch diff FROM TO`: two releases compared culprit by culprit.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare two releases: which hangs are new, gone, more or fewer.",
        usage: "hangwatch diff <from> <to> [<options>]",
        discussion: """
            Groups the hangs of two versions of the service (the version in their reports, as top \
            --by version lists them) by signature, by function names where the reports have them, \
            so a rebuild of unchanged code is not new. Each group: its status, its hangs in FROM \
            and in TO, their rates per monitored hour when known, its signature and top frame.

            Status: new (only in TO), gone (only in FROM), more, fewer or same. When the monitored \
            time of both versions is known (the agent's .monitored-time.json in the service \
            directories, summed over the services in view; not with --since or --until, as it is a \
            running total), rates are compared: same when TO's is within 25% of FROM's either way. \
            Otherwise counts are: same only when equal. New first, then more, fewer, gone, same; \
            most hangs in TO first.

            A version with no hangs is an error that names the versions there are (exit 1).

            Examples:
              hangwatch diff 1.4.2 1.5.0
              hangwatch diff 1.4.2 1.5.0 --service billing
              hangwatch diff 1.4.2 1.5.0 --json | jq -r '.groups[].status'
            """)

    @Argument(help: ArgumentHelp("The release before: a version as the reports carry it.", valueName: "from"))
    var from: String

    @Argument(help: ArgumentHelp("The release after.", valueName: "to"))
    var to: String

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var filters: FilterOptions
    @OptionGroup var reading: ReadingOptions

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if from.isEmpty || to.isEmpty { throw ValidationError("diff takes two versions, such as 1.4.2 1.5.0 (hangwatch top --by version lists them)") }
        if from == to { throw ValidationError("FROM and TO are both \(from): give two different versions (hangwatch top --by version lists them)") }
    }

    struct DiffJSON: Encodable {
        struct Side: Encodable {
            var version: String
            var count: Int
            /// Absent when unknown.
            var monitoredSeconds: Double?
            var perMonitoredHour: Double?
        }

        struct Count: Encodable {
            var count: Int
            /// Absent when the version's monitored time is unknown.
            var perMonitoredHour: Double?
        }

        struct Group: Encodable {
            var status: ReleaseDiff.Status
            var signature: String
            var signatureKind: HangReport.SignatureKind
            var from, to: Count
            var services: [String]
            var topFrame: String?
            /// The longest hang's report (in TO when there is one there).
            var representative: String
            var stack: [String]
        }

        var from, to: Side
        /// `rates` or `counts`: what the statuses compare.
        var comparedBy: ReleaseDiff.Basis
        var groups: [Group]
    }

    func run() throws {
        let library = ReportLibrary(directory: directory, reading: reading)
        let filter = filters.filter()
        let summaries = try library.summaries(filter)
        let present = Set(summaries.compactMap(\.serviceVersion))
        let missing = [from, to].filter { !present.contains($0) }
        if !missing.isEmpty {
            throw CommandFailure(
                message: Self.missingMessage(
                    missing, versions: ReleaseDiff.versions(in: summaries), directory: library.directory, filtered: filter != ReportFilter()),
                exitCode: Exit.nothingMatched)
        }
        let hours = MonitoredHours(library: library, services: filters.service, windowed: filters.narrowsMonitoredTime, summaries: summaries)
        let diff = ReleaseDiff(summaries, from: from, to: to, monitoredSeconds: { hours.seconds(of: $0) })
        if json {
            print(String(decoding: try HangReport.makeEncoder().encode(Self.json(diff)), as: UTF8.self))
        } else {
            print(Self.header(diff, windowed: hours.windowed))
            print(Self.table(diff, terminal: library.terminal))
        }
    }

    /// `no hangs of version 9.9 in DIR; the versions there: 1.5.0, 1.4.2 (last seen first)`.
    static func missingMessage(_ missing: [String], versions: [String], directory: String, filtered: Bool) -> String {
        let names = missing.count == 1 ? "version \(missing[0])" : "versions \(missing[0]) and \(missing[1])"
        let place = filtered ? "match in \(directory)" : "in \(directory)"
        guard !versions.isEmpty else {
            return "no hangs of \(names) \(place), and no hang there carries a version (monitors older than serviceVersion write none)"
        }
        let shown = versions.prefix(10).joined(separator: ", ") + (versions.count > 10 ? ", and \(versions.count - 10) more" : "")
        return "no hangs of \(names) \(place); the versions with hangs: \(shown) (last seen first)"
    }

    /// `1.4.2 (20.0 monitored hours) → 1.5.0 (monitored time unknown): by count`.
    static func header(_ diff: ReleaseDiff, windowed: Bool) -> String {
        func side(_ side: ReleaseDiff.Side) -> String {
            side.version + " (" + (side.monitoredSeconds.map(MonitoredHours.hoursText) ?? "monitored time unknown") + ")"
        }
        let basis =
            switch diff.basis {
            case .rates: "by rate per monitored hour, same within ±\(Int(ReleaseDiff.tolerance * 100))%"
            case .counts: windowed ? "by count (monitored time is not used with --since, --until, --pod, --namespace or --container)" : "by count"
            }
        return side(diff.from) + " → " + side(diff.to) + ": " + basis
    }

    /// One row per culprit: status, hangs FROM → TO, rates (when either version's time is known),
    /// signature and the top frame (cut to the terminal).
    static func table(_ diff: ReleaseDiff, terminal: Terminal) -> String {
        let rates = diff.from.monitoredSeconds != nil || diff.to.monitoredSeconds != nil
        var columns: [Table.Column] = [.init(header: "STATUS"), .init(header: "HANGS", right: true)]
        if rates { columns.append(.init(header: "PER HOUR", right: true)) }
        columns += [
            .init(header: "SIG"),
            .init(header: "TOP FRAME", shrinkable: true, minimum: 12, cut: { FrameNaming.fit($0, width: $1) }),
        ]
        var table = Table(columns)
        for row in diff.rows {
            let style: Terminal.Style? =
                switch row.status {
                case .new: .red
                case .more: .yellow
                case .fewer, .gone: .green
                case .same: nil
                }
            var cells: [Table.Cell] = [.init(row.status.rawValue, style), .init("\(row.fromCount) → \(row.toCount)")]
            if rates {
                let text = { (rate: Double?) in rate.map(MonitoredHours.rateText) ?? "-" }
                cells.append(.init(text(row.fromPerHour) + " → " + text(row.toPerHour)))
            }
            cells += [
                .init(String(row.signature.prefix(8)) + " (" + row.signatureKind.rawValue + ")"),
                .init(row.representative.topFrame ?? "-"),
            ]
            table.append(cells)
        }
        return table.render(terminal: terminal).joined(separator: "\n")
    }

    static func json(_ diff: ReleaseDiff) -> DiffJSON {
        func side(_ side: ReleaseDiff.Side) -> DiffJSON.Side {
            DiffJSON.Side(version: side.version, count: side.count, monitoredSeconds: side.monitoredSeconds, perMonitoredHour: side.perHour(side.count))
        }
        return DiffJSON(
            from: side(diff.from), to: side(diff.to), comparedBy: diff.basis,
            groups: diff.rows.map { row in
                DiffJSON.Group(
                    status: row.status, signature: row.signature, signatureKind: row.signatureKind,
                    from: DiffJSON.Count(count: row.fromCount, perMonitoredHour: row.fromPerHour),
                    to: DiffJSON.Count(count: row.toCount, perMonitoredHour: row.toPerHour), services: row.services,
                    topFrame: row.representative.topFrame, representative: row.representative.id, stack: row.representative.stack)
            })
    }
}
