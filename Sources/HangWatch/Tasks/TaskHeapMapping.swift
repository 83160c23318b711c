/// A mapping of `/proc/self/maps` the task dump scans for tasks: private, writable and backed by no
/// file (the malloc heap, its arenas, large allocations, thread stacks), where the runtime
/// allocates every task. Pure: the parse is tested on maps text.
struct TaskHeapMapping: Sendable, Equatable {
    var start: UInt
    var end: UInt

    var bytes: UInt { end - start }

    /// From one line of `maps` (`start-end perms offset dev inode [path]`): nil for any other kind
    /// of mapping (shared, read-only, a file's, the vDSO, `[vvar]`, a guard page).
    init?(line: Substring) {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count >= 5, fields[1].count == 4, fields[1].hasPrefix("rw"), fields[1].hasSuffix("p"), fields[4] == "0" else {
            return nil
        }
        if fields.count == 6 {
            let path = fields[5].drop { $0 == " " }
            guard path.isEmpty || path == "[heap]" || path == "[stack]" || path.hasPrefix("[anon") else { return nil }
        }
        let range = fields[0].split(separator: "-")
        guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16), start < end else { return nil }
        self.start = start
        self.end = end
    }

    init(start: UInt, end: UInt) {
        self.start = start
        self.end = end
    }

    /// The mappings to scan in `maps`' text, in address order.
    static func parse(maps: String) -> [TaskHeapMapping] {
        maps.split(separator: "\n").compactMap(TaskHeapMapping.init(line:))
    }
}
