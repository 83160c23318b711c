/// Finds where a hang's time went: the samples form a call tree (root first, frames identified by
/// function, so samples at different instructions of one function agree); from the root, follow
/// the heaviest child while it outweighs the time spent in the current node itself. The node
/// reached is the heaviest path's end; its heaviest stack represents it.
///
/// Unlike "the most frequent exact stack", this does not split one hot function's time between
/// the helpers it happens to be in when sampled, nor let a rarely-seen leaf win by a sample.
struct HeaviestPath {
    struct Sample {
        /// Frame indices, innermost first.
        var frames: [Int]
        var weight: UInt64
        /// Index of the sample's stack in the report.
        var stack: Int
    }

    struct Result: Equatable {
        var stack: Int
        var sampleCount: Int
        var weight: UInt64
        /// How many frames, from the root, almost all of the time went through (the trunk):
        /// `trunkShare` of the total or more. The trunk is what identifies a hang for grouping; a
        /// leaf that a few samples happened to catch does not.
        var trunkDepth: Int
    }

    /// The share of the total time a node needs to be part of the trunk.
    static let trunkShare = 0.75

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
        var nodes = [Node()]
        for sample in samples where !sample.frames.isEmpty {
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
        var depth = 0
        var trunkDepth = 0
        let total = Double(nodes[0].weight)
        while true {
            // Ties go to the child seen first in the samples (the lowest node index), so the result
            // does not depend on dictionary order.
            let best = nodes[current].children.values.max { lhs, rhs in
                (nodes[lhs].weight, nodes[lhs].sampleCount, -lhs) < (nodes[rhs].weight, nodes[rhs].sampleCount, -rhs)
            }
            guard let best, current == 0 || nodes[best].weight > nodes[current].selfWeight else { break }
            current = best
            depth += 1
            if trunkDepth == depth - 1 && Double(nodes[current].weight) >= total * trunkShare {
                trunkDepth = depth
            }
        }
        guard current != 0,
            let stack = nodes[current].endingHere.max(by: { ($0.value, -$0.key) < ($1.value, -$1.key) })?.key
        else { return nil }
        return Result(
            stack: stack, sampleCount: nodes[current].sampleCount, weight: nodes[current].weight, trunkDepth: trunkDepth)
    }
}
