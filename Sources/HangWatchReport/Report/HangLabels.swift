/// The bounds of a report's labels (`HangReport.labels`), as a pure rule: what the monitor writes
/// of the labels in effect (`HangMonitor.withLabels`), however many and however long the caller's.
///
/// - The label sets in effect are merged outermost first: an inner set's key replaces an outer
///   one's, the outer set's other keys stay.
/// - At most `maxCount` labels: `traceparent` first (it links the hang to its trace), then the
///   others in key order; how many were left out is `labelsOmitted`.
/// - A key longer than `maxKeyBytes` or a value longer than `maxValueBytes` (UTF-8) is cut at a
///   character boundary and ends with `…` (within the limit). An empty key is dropped.
/// - Control characters (a newline in a header value) become `\u{FFFD}`: a label is one line.
public enum HangLabels {
    public static let maxCount = 8
    public static let maxKeyBytes = 40
    public static let maxValueBytes = 128
    /// The mark at the end of a cut key or value.
    public static let cutMark = "…"

    /// The labels a report carries for the label sets `sets` (outermost first), and how many
    /// were left out; nil labels when there are none.
    public static func bounded(_ sets: [[String: String]]) -> (labels: [String: String]?, omitted: Int) {
        var merged: [String: String] = [:]
        for set in sets {
            for (key, value) in set where !key.isEmpty { merged[key] = value }
        }
        guard !merged.isEmpty else { return (nil, 0) }
        let keys = merged.keys.sorted { ($0 == "traceparent" ? 0 : 1, $0) < ($1 == "traceparent" ? 0 : 1, $1) }
        var labels: [String: String] = [:]
        for key in keys.prefix(maxCount) {
            labels[cut(clean(key), maxBytes: maxKeyBytes)] = cut(clean(merged[key]!), maxBytes: maxValueBytes)
        }
        // Two long keys cut to the same text are one label: the other one counts as left out.
        return (labels, merged.count - labels.count)
    }

    /// `text` within `maxBytes` of UTF-8: whole, or its longest prefix of whole characters that
    /// leaves room for `cutMark`, followed by it.
    public static func cut(_ text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        let room = maxBytes - cutMark.utf8.count
        var kept = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            if bytes + size > room { break }
            kept.append(character)
            bytes += size
        }
        return kept + cutMark
    }

    /// Control characters replaced by U+FFFD.
    static func clean(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars { scalars.append(isControl(scalar) ? "\u{FFFD}" : scalar) }
        return String(scalars)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value)
    }
}
