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
        return order.map { "\($0) \(max(1, Int(weights[$0]!.rounded())))\n" }.joined()
    }

    /// Frame names may not contain the separator or a line break.
    static func sanitize(_ name: String) -> String {
        String(name.map { $0 == ";" ? ":" : ($0 == "\n" || $0 == "\r" ? " " : $0) })
    }
}
