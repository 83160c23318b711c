import Foundation

/// What `hangwatch list`, `top` and `show` print, read back into its parts: the layout a sample in
/// the docs must keep (its columns, headers, line kinds and time formats) and the values that tie
/// the commands' outputs to each other (signatures, times, durations). A line that does not read
/// as its command prints it is an error naming it.
enum SampleOutput {
    struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    /// A time zone as the CLI names one: `+01:00`, `-05:30`, `UTC`.
    static let zone = #"(?:[+-]\d\d:\d\d|UTC)"#

    static func match(_ pattern: String, _ line: String) -> [String]? {
        guard let regex = try? Regex(pattern), let found = try? regex.wholeMatch(in: line) else { return nil }
        return (1..<found.output.count).map { found.output[$0].substring.map(String.init) ?? "" }
    }

    // MARK: list

    struct ListRow: Equatable {
        var time, service, pid, duration, cpu, doing, topFrame, signature: String
    }

    struct ListTable {
        /// The header's words, the zone as `<zone>`: `<zone> SERVICE PID DUR CPU DOING TOP FRAME SIG`.
        var header: [String]
        var rows: [ListRow]
        /// Times with their day (`12-07 06:12:10`) rather than of today (`06:12:10`).
        var dated: Bool
    }

    static func list(_ lines: [String]) throws -> ListTable {
        guard let head = lines.first else { throw Unreadable(description: "list: no header") }
        let header = head.split(separator: " ").map { word in
            match(zone, String(word)) != nil ? "<zone>" : String(word)
        }
        guard header.first == "<zone>" || header.prefix(2) == ["STARTED", "<zone>"] else {
            throw Unreadable(description: "list: a header without its zone: \(head)")
        }
        let row =
            #"(\d\d:\d\d:\d\d|\d\d-\d\d \d\d:\d\d:\d\d) +(\S+) +(\d+) +(\d[\d.]*(?:µs|us|ms|s|m|h)\+?) +(\S+) +(\S+) +(.+?) +([0-9a-f]{8})(?: \+\d+ repeats)?"#
        var rows: [ListRow] = []
        for line in lines.dropFirst() {
            guard let parts = match(row, line) else { throw Unreadable(description: "list: not a row: \(line)") }
            rows.append(ListRow(
                time: parts[0], service: parts[1], pid: parts[2], duration: parts[3], cpu: parts[4], doing: parts[5],
                topFrame: parts[6], signature: parts[7]))
        }
        return ListTable(header: header, rows: rows, dated: rows.contains { $0.time.contains("-") })
    }

    // MARK: top

    struct TopGroup {
        var count: Int
        var total, max: String
        /// `sig 1a2b3c4d (names)`, `route=GET /cart`, `route: none`, `version=1.5.0 (…)`.
        var key: String
        var signature: String?
        var services: String
        var first, last: String
        var frames: [String]
    }

    static func top(_ lines: [String]) throws -> [TopGroup] {
        var groups: [TopGroup] = []
        var rest = lines[...]
        while let line = rest.first {
            rest = rest.dropFirst()
            if line.isEmpty { continue }
            guard let head = match(#"#\d+  (\d+) hangs?(?: [^,]*)?, (\S+) in all  p50 \S+  p95 \S+  max (\S+)  (.+)"#, line) else {
                throw Unreadable(description: "top: not a group's first line: \(line)")
            }
            guard let second = rest.first,
                let times = match(#"    (.+?)  first (\d\d-\d\d \d\d:\d\d:\d\d)  last (\d\d-\d\d \d\d:\d\d:\d\d) "# + zone, second)
            else { throw Unreadable(description: "top: not a group's time line: \(rest.first ?? "(none)")") }
            rest = rest.dropFirst()
            let frames = rest.prefix { $0.hasPrefix("      ") && $0.count > 6 }
            rest = rest.dropFirst(frames.count)
            let signature = match(#"sig ([0-9a-f]{8}) \((?:names|addresses)\)"#, head[3])?.first
            groups.append(TopGroup(
                count: Int(head[0]) ?? -1, total: head[1], max: head[2], key: head[3], signature: signature, services: times[0],
                first: times[1], last: times[2], frames: frames.map { $0.trimmingCharacters(in: .whitespaces) }))
        }
        return groups
    }

    // MARK: show

    struct Show {
        /// The first word of every line at the margin, in order: `hang`, `service`, …, `file`.
        var heads: [String]
        /// What follows the head, for each head.
        var fields: [String: String]
        /// `started`: the time (to the millisecond), its zone, and how long it lasted.
        var started, lasted: String
        var signature: String
    }

    static func show(_ lines: [String]) throws -> Show {
        var heads: [String] = []
        var fields: [String: String] = [:]
        for line in lines where !line.isEmpty && !line.hasPrefix(" ") {
            let head = String(line.prefix { $0 != " " })
            heads.append(head)
            fields[head] = fields[head] ?? String(line.dropFirst(head.count)).trimmingCharacters(in: .whitespaces)
        }
        guard let started = fields["started"].flatMap({ match(#"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) "# + zone + #", lasted (\S+) \(threshold \S+\)"#, $0) })
        else { throw Unreadable(description: "show: no started line as show prints it: \(fields["started"] ?? "(none)")") }
        guard let signature = fields["signature"].flatMap({ match(#"([0-9a-f]{16}) by (?:names|addresses)(?: \(by addresses: [0-9a-f]{16}\))?"#, $0) })
        else { throw Unreadable(description: "show: no signature line as show prints it: \(fields["signature"] ?? "(none)")") }
        return Show(heads: heads, fields: fields, started: started[0], lasted: started[1], signature: signature[0])
    }
}
