extension StackSignature {
    /// The name signature of `frames` (innermost first): the same call path, by function names, in
    /// any build of the same code (docs/report-format.md, `nameSignature`); nil when a frame the
    /// rule counts has no name.
    ///
    /// - The frames counted are the app frames, as for the address signature (`compute`), each by
    ///   its name as `SignatureName.normalize` makes it: no offsets, no lines, no specialization or
    ///   partial-function noise. Glue (thunks, outlined copies, linker stubs) never counts; a name
    ///   that repeats right after itself counts once (a thunk or a `partial apply` and the function
    ///   it calls, a recursion's depth).
    /// - When the only app frames left are the process's entry (`main`, among the outermost
    ///   `entryDepth` frames of a complete stack), every frame counts by name, system frames too.
    /// - `wait`: the system call the thread was blocked in at this stack (`futex`, `read`), for a
    ///   stack of a thread that waited: a function that blocks in `read` and the same function
    ///   computing, or waiting on a lock, are different call paths whose app frames agree.
    /// - A truncated stack is marked, as in `compute`.
    public static func computeByNames(
        frames: [HangReport.Frame], images: [HangReport.Image], complete: Bool = true, wait: String? = nil
    ) -> String? {
        var counted: [(index: Int, name: String)] = []
        for index in appFrameIndices(frames, images: images) {
            guard let symbol = frames[index].symbol else { return nil }
            if let name = SignatureName.normalize(symbol) { counted.append((index, name)) }
        }
        let entry = complete ? max(0, frames.count - entryDepth) : frames.count
        var names: [String] = []
        if counted.contains(where: { $0.index < entry }) {
            names = counted.map(\.name)
        } else {
            for frame in frames {
                guard let symbol = frame.symbol else { return nil }
                if let name = SignatureName.normalize(symbol) { names.append(name) }
            }
        }
        var hash = NameHash()
        hash.mix("names/1")
        if !complete { hash.mix("truncated") }
        var previous: String?
        for name in names where name != previous {
            hash.mix(name)
            previous = name
        }
        if let wait { hash.mix("wait " + wait) }
        return hash.text
    }

    /// FNV-1a 64, each part followed by a zero byte.
    private struct NameHash {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325

        mutating func mix(_ text: String) {
            for byte in text.utf8 + [0] {
                value ^= UInt64(byte)
                value = value &* 0x0000_0100_0000_01b3
            }
        }

        var text: String { String(value, radix: 16).leftPadded(to: 16) }
    }
}
