import HangWatchReport

/// The folded-stack format of flamegraph.pl and inferno: one line per distinct stack,
/// `root;caller;...;leaf <weight>`, weights in whole milliseconds of sampled time.
public enum FoldedStacks {
    public static func render(_ reports: [HangReport]) -> String {
        var weights: [String: Double] = [:]
        var order: [String] = []
        for report in reports {
            for stack in SampledStacks.of(report) where !stack.frames.isEmpty {
                let line = stack.frames.map(sanitize).joined(separator: ";")
                if weights[line] == nil { order.append(line) }
                weights[line, default: 0] += stack.weightMs
            }
        }
        // Weights come from report files: one too large for an Int is written as the largest.
        return order.map { "\($0) \(Int(exactly: weights[$0]!.rounded()).map { max(1, $0) } ?? Int.max)\n" }.joined()
    }

    /// Frame names may not contain the separator or a line break.
    static func sanitize(_ name: String) -> String {
        String(name.map { $0 == ";" ? ":" : ($0 == "\n" || $0 == "\r" ? " " : $0) })
    }
}
