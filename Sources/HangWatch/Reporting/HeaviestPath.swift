/// Finds where a hang's time went: the samples form a call tree (root first, frames identified by
/// function, so samples at different instructions of one function agree); from the root, follow
/// the heaviest child while it outweighs the time spent in the current node itself. The node
/// reached is the heaviest path's end; its heaviest stack represents it.
///
/// Unlike "the most frequent exact stack", this does not split one hot function's time between
/// the helpers it happens to be in when sampled, nor let a rarely-seen leaf win by a sample.
///
/// Stacks that stop before the outermost frame (truncated) have no root of their own: a truncated
/// sample whose frames are the innermost frames of a complete stack counts as that stack (the
/// heaviest such, when several match), so a leaf that one capture could not get past never outweighs
/// the complete stacks through it. Truncated samples that match no complete stack are left out,
/// unless they outweigh the complete ones (then every sample counts, and the result may be a
/// truncated stack, which the report marks).
struct HeaviestPath {
    struct Sample {
        /// Frame indices, innermost first.
        var frames: [Int]
        var weight: UInt64
        /// Index of the sample's stack in the report.
        var stack: Int
        /// The stack reached the outermost frame.
        var complete = true
    }

    struct Result: Equatable {
        var stack: Int
        var sampleCount: Int
        var weight: UInt64
    }

    private struct Node {
        var weight: UInt64 = 0
        var selfWeight: UInt64 = 0
        var children: [String: Int] = [:]
        /// Samples that end here: (stack, weight).
        var endingHere: [Int: UInt64] = [:]
        var sampleCount = 0
    }

    /// `identity` names the function of a frame index.
    static func find(_ samples: [Sample], identity: (Int) -> String) -> Result? {
        // Every sample stands for at least a microsecond: a provisional report's single sample
        // (whose time has not run yet) still has a heaviest stack, and so a signature.
        let samples = samples.filter { !$0.frames.isEmpty }.map { sample -> Sample in
            var sample = sample
            sample.weight = max(sample.weight, 1)
            return sample
        }
        let counted = attributed(samples, identity: identity)
        var nodes = [Node()]
        for sample in counted {
            var current = 0
            nodes[0].weight += sample.weight
            nodes[0].sampleCount += 1
            for frame in sample.frames.reversed() {
                let key = identity(frame)
                let child: Int
                if let existing = nodes[current].children[key] {
                    child = existing
                } else {
                    nodes.append(Node())
                    child = nodes.count - 1
                    nodes[current].children[key] = child
                }
                nodes[child].weight += sample.weight
                nodes[child].sampleCount += 1
                current = child
            }
            nodes[current].selfWeight += sample.weight
            nodes[current].endingHere[sample.stack, default: 0] += sample.weight
        }
        var current = 0
        while true {
            // Ties go to the child seen first in the samples (the lowest node index), so the result
            // does not depend on dictionary order.
            let best = nodes[current].children.values.max { lhs, rhs in
                (nodes[lhs].weight, nodes[lhs].sampleCount, -lhs) < (nodes[rhs].weight, nodes[rhs].sampleCount, -rhs)
            }
            guard let best, current == 0 || nodes[best].weight > nodes[current].selfWeight else { break }
            current = best
        }
        guard current != 0,
            let stack = nodes[current].endingHere.max(by: { ($0.value, -$0.key) < ($1.value, -$1.key) })?.key
        else { return nil }
        return Result(stack: stack, sampleCount: nodes[current].sampleCount, weight: nodes[current].weight)
    }

    /// The samples the tree is built from: complete ones, and truncated ones counted as the complete
    /// stack whose innermost frames they are; all samples when the truncated ones that match nothing
    /// outweigh the rest.
    private static func attributed(_ samples: [Sample], identity: (Int) -> String) -> [Sample] {
        let complete = samples.filter(\.complete)
        guard !complete.isEmpty, complete.count < samples.count else { return samples }
        // The complete stacks by function, with their weight.
        var stacks: [[String]: (sample: Sample, weight: UInt64)] = [:]
        for sample in complete {
            let key = sample.frames.map(identity)
            stacks[key, default: (sample, 0)].weight += sample.weight
        }
        var counted = complete
        var unmatched: UInt64 = 0
        var matchedWeight = complete.reduce(0) { $0 + $1.weight }
        for sample in samples where !sample.complete {
            let prefix = sample.frames.map(identity)
            let match = stacks.filter { $0.key.count > prefix.count && Array($0.key.prefix(prefix.count)) == prefix }
                .max { ($0.value.weight, $1.key.count) < ($1.value.weight, $0.key.count) }
            if let match {
                var grafted = match.value.sample
                grafted.weight = sample.weight
                counted.append(grafted)
                matchedWeight += sample.weight
            } else {
                unmatched += sample.weight
            }
        }
        return unmatched > matchedWeight ? samples : counted
    }
}
