import HangWatchReport

/// A report's frames and stacks as they are added: each distinct frame and stack once, samples
/// referring to them by index. The hung thread's samples go in first, then the stacks of other
/// threads the report names (a lock's holder, a wait chain's threads).
struct ReportStackTable {
    let images: ImageMap
    private(set) var frames: [HangReport.Frame] = []
    private(set) var stacks: [HangReport.Stack] = []
    private var frameIndex: [UInt: Int] = [:]
    private var asyncFrameIndex: [UInt: Int] = [:]
    private var stackIndex: [[Int]: Int] = [:]

    init(images: ImageMap) {
        self.images = images
    }

    /// The table a built report's frames and stacks make, to add more stacks to it.
    init(images: ImageMap, adopting report: HangReport) {
        self.images = images
        frames = report.frames
        stacks = report.stacks
        for (index, frame) in report.frames.enumerated() {
            guard let address = Hex.parse(frame.address) else { continue }
            if frame.async == true { asyncFrameIndex[address] = index } else { frameIndex[address] = index }
        }
        for (index, stack) in report.stacks.enumerated() { stackIndex[stack.frames] = index }
    }

    /// The index of the frame of `address` as an async caller (a task's chain: the exact first
    /// instruction of a partial function), added if new.
    mutating func asyncFrame(_ address: UInt) -> Int {
        if let known = asyncFrameIndex[address] { return known }
        var frame = ReportBuilder.frame(address, lookup: address, images: images)
        frame.async = true
        frames.append(frame)
        asyncFrameIndex[address] = frames.count - 1
        return frames.count - 1
    }

    /// The index of the frame of `address` as an ordinary one (a data address, such as an actor's
    /// type metadata, whose symbol names it), added if new.
    mutating func plainFrame(_ address: UInt) -> Int {
        if let known = frameIndex[address] { return known }
        frames.append(ReportBuilder.frame(address, lookup: address, images: images))
        frameIndex[address] = frames.count - 1
        return frames.count - 1
    }

    /// The index of `sample`'s stack, added if new; nil when the sample has no stack.
    mutating func add(_ sample: StackSample) -> Int? {
        guard !sample.frames.isEmpty else { return nil }
        let callers = sample.asyncCallers.map { $0.proven(isResumeStart: images.isAsyncResumeStart) }
        var indices = sample.frames.enumerated().map { position, address -> Int in
            if let known = frameIndex[address] { return known }
            // The innermost frame is the exact program counter. The others are return addresses,
            // just after their call, which may be the function's last instruction: look the
            // function up from the byte before.
            frames.append(ReportBuilder.frame(address, lookup: position == 0 ? address : address &- 1, images: images))
            frameIndex[address] = frames.count - 1
            return frames.count - 1
        }
        if let callers, callers.after < indices.count {
            // Async callers resume at a partial function's first instruction: looked up as they are.
            var inserted: [Int] = []
            for address in callers.resumeAddresses { inserted.append(asyncFrame(address)) }
            indices.insert(contentsOf: inserted, at: callers.after + 1)
        }
        if let known = stackIndex[indices] {
            if sample.truncated {
                stacks[known].truncated = true
                stacks[known].truncation = stacks[known].truncation ?? sample.truncation?.rawValue
            }
            if let callers, callers.end != .complete {
                stacks[known].asyncCallers = stacks[known].asyncCallers ?? callers.end.rawValue
            }
            return known
        }
        stacks.append(
            HangReport.Stack(
                frames: indices, truncated: sample.truncated, truncation: sample.truncation?.rawValue,
                framePointer: sample.framePointer?.rawValue, asyncCallers: callers?.end.rawValue))
        stackIndex[indices] = stacks.count - 1
        return stacks.count - 1
    }
}
