/// Structured concurrency as a tree: each task's children (async let and task-group children, as
/// its child and group records list them, and every task whose parent it is), and the roots: tasks
/// with children and no parent among the tasks. Pure.
struct TaskTree: Sendable, Equatable {
    /// Children by parent address, in the order the records list them (then any only their parent
    /// link names).
    var children: [UInt: [UInt]]
    var roots: [UInt]

    init(_ tasks: [TaskSnapshot]) {
        let known = Set(tasks.map(\.address))
        var children: [UInt: [UInt]] = [:]
        var listed: [UInt: Set<UInt>] = [:]
        for task in tasks {
            for child in task.children where known.contains(child) && listed[task.address, default: []].insert(child).inserted {
                children[task.address, default: []].append(child)
            }
        }
        for task in tasks {
            guard let parent = task.parent, known.contains(parent), listed[parent, default: []].insert(task.address).inserted else { continue }
            children[parent, default: []].append(task.address)
        }
        self.children = children
        let byAddress = Dictionary(tasks.map { ($0.address, $0) }, uniquingKeysWith: { first, _ in first })
        roots = tasks.filter { children[$0.address] != nil && ($0.parent.map { byAddress[$0] == nil } ?? true) }.map(\.address)
    }
}
