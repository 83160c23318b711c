/// Who waits for whom among tasks and actors, and the cycles in it: a task awaiting another (`async
/// let`, a task's value), a task awaiting its group (its children), a task queued on an actor, the
/// actor held by the task running on it, and a running task's scope, which cannot end before its
/// children (a task holding an actor that its own child waits for). A cycle is called while it
/// lasts: none of its steps can go on by itself (a holder that suspends lets its actor go, so the
/// finding says whether it is blocked). Pure.
struct TaskWaitGraph: Sendable {
    enum Node: Hashable, Sendable {
        case task(UInt)
        case actor(UInt)
    }

    private(set) var edges: [Node: [Node]] = [:]

    /// `holders`: each actor's holder task (by address).
    init(tasks: [TaskSnapshot], layout: TaskLayout, holders: [UInt: UInt]) {
        let known = Set(tasks.map(\.address))
        var groupChildren: [UInt: [UInt]] = [:]
        for task in tasks { if let group = task.group { groupChildren[group, default: []].append(task.address) } }
        for task in tasks {
            var next: [Node] = []
            switch task.dependency {
            case .task(let other) where known.contains(other): next.append(.task(other))
            case .group(let group): next += (groupChildren[group] ?? []).map(Node.task)
            case .executor(let identity, 0) where identity != 0: next.append(.actor(identity))
            default: break
            }
            if TaskState(task, layout: layout) == .running {
                next += task.children.filter { known.contains($0) }.map(Node.task)
            }
            if !next.isEmpty { edges[.task(task.address)] = next }
        }
        for (actor, holder) in holders where known.contains(holder) { edges[.actor(actor), default: []].append(.task(holder)) }
    }

    /// Every distinct cycle (as a set of nodes: each once), each starting at its smallest task,
    /// at most `limit`.
    func cycles(limit: Int = 16) -> [[Node]] {
        var colour: [Node: UInt8] = [:]  // 1 on the path, 2 done
        var found: [[Node]] = []
        var seenSets: Set<Set<Node>> = []
        for start in edges.keys.sorted(by: Self.order) where colour[start] == nil {
            var path: [Node] = [start]
            var iterators: [Int] = [0]
            colour[start] = 1
            while let last = path.last {
                let next = edges[last] ?? []
                let position = iterators[iterators.count - 1]
                guard position < next.count else {
                    colour[last] = 2
                    path.removeLast()
                    iterators.removeLast()
                    continue
                }
                iterators[iterators.count - 1] += 1
                let node = next[position]
                switch colour[node] {
                case 1:
                    let cycle = Array(path[path.firstIndex(of: node)!...])
                    if seenSets.insert(Set(cycle)).inserted, found.count < limit { found.append(Self.rotated(cycle)) }
                case nil:
                    colour[node] = 1
                    path.append(node)
                    iterators.append(0)
                default:
                    break
                }
            }
        }
        return found
    }

    /// Tasks before actors, then by address.
    private static func order(_ a: Node, _ b: Node) -> Bool {
        switch (a, b) {
        case (.task(let x), .task(let y)), (.actor(let x), .actor(let y)): x < y
        case (.task, .actor): true
        case (.actor, .task): false
        }
    }

    private static func rotated(_ cycle: [Node]) -> [Node] {
        guard let start = cycle.indices.min(by: { order(cycle[$0], cycle[$1]) }) else { return cycle }
        return Array(cycle[start...] + cycle[..<start])
    }
}
