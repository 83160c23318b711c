/// Reads one task candidate (an address whose first word is the task metadata: `UnsafeTaskHeapScan`)
/// into a `TaskSnapshot`, from the scan's copy of its chunk where the memory lies in it, else
/// through the kernel (a task that ends while read costs a failed read, never a fault), and checks
/// it against the invariants every live task keeps on the verified layout (`TaskLayout`). A
/// candidate that fails one is not a live task (a copy of one in freed memory or a buffer, a
/// completed task kept by its handle) and is rejected with the reason. Whether a task moved while
/// read is checked afterwards, for all at once (`UnsafeTaskVerification`). Unsafe: it reads raw
/// memory at addresses taken from the heap.
struct UnsafeTaskReader {
    let layout: TaskLayout
    let words: UnsafeTaskRuntime.Words
    /// The async callers kept per task (the monitor's cap for async callers).
    var chainLimit = 64
    /// The children kept per status record.
    var childLimit = 100_000
    /// Reads through one 4 KiB window: a task's contexts and records sit together in its slab.
    private var window = UnsafeMemoryWindow()
    /// A task's header, copied: one buffer for every task, zeroed at `release` (a copy of a task
    /// left in freed memory, or on the watchdog's stack, would be found by the next scan).
    private let header = UnsafeMutableBufferPointer<UInt>.allocate(capacity: 64)

    init(layout: TaskLayout, words: UnsafeTaskRuntime.Words) {
        self.layout = layout
        self.words = words
    }

    /// System calls made so far.
    var reads: Int { window.reads }

    /// Zeroes the window before its memory goes back to malloc (a copy of a task left in freed
    /// memory would be found by the next scan).
    func release() {
        window.release()
        header.initialize(repeating: 0)
        header.deallocate()
    }

    /// The task at `address`, or why it is not a live task, as read now (from the scan's copy
    /// where `view` covers it). Whether it moved while read is checked afterwards, for every task
    /// at once (`UnsafeTaskVerification`).
    mutating func read(_ address: UInt) -> Result<TaskSnapshot, TaskRejection> {
        readOnce(address)
    }

    /// Reads served from `bytes`, a copy of the memory at `base`, where they fall inside it (the
    /// scan's chunk); nil: every read through the kernel.
    mutating func view(_ view: (base: UInt, bytes: UnsafeRawBufferPointer)?) {
        window.view = view
        window.forget()
    }

    mutating func readOnce(_ task: UInt) -> Result<TaskSnapshot, TaskRejection> {
        let count = (layout.taskSize + 3 * 8) / 8
        precondition(count <= header.count)
        let header = UnsafeMutableBufferPointer(rebasing: self.header[0..<count])
        guard window.words(task, into: header) else { return .failure(.unreadable) }
        func at(_ offset: Int) -> UInt { header[offset / 8] }
        func u32(_ offset: Int) -> UInt32 { UInt32(truncatingIfNeeded: header[offset / 8] >> UInt((offset % 8) * 8)) }
        guard at(0) == words.taskMetadata else { return .failure(.metadataChanged) }
        let jobFlags = u32(layout.jobFlags)
        guard jobFlags & 0xff == 0 else { return .failure(.notATask) }
        let id = UInt64(u32(layout.idLow)) | UInt64(u32(layout.idHigh)) << 32
        guard id != 0 else { return .failure(.noID) }
        let status = u32(layout.status)
        guard status & layout.statusComplete == 0 else { return .failure(.complete) }
        let context = at(layout.resumeContext)
        guard context != 0, context & 15 == 0 else { return .failure(.badResumeContext) }
        let runJob = at(layout.runJob)
        var snapshot = TaskSnapshot(
            address: task, id: id, jobFlags: jobFlags, statusFlags: status, basePriority: UInt8(truncatingIfNeeded: at(layout.basePriority)),
            resumeFunction: runJob, resumeContext: context)
        snapshot.notStarted = runJob == words.futureAdapter || runJob == words.nonFutureAdapter
        if jobFlags & layout.flagChild != 0 {
            let parent = at(layout.taskSize)
            guard parent != 0, parent & 15 == 0 else { return .failure(.childWithoutParent) }
            snapshot.parent = parent
            if jobFlags & layout.flagGroupChild != 0 { snapshot.group = at(layout.taskSize + layout.childFragmentSize) }
        }
        if let rejection = readRecords(task, first: at(layout.statusRecord), into: &snapshot) { return .failure(rejection) }
        // The resume function as the runtime names it for logging (AsyncTask::getResumeFunctionForLogging).
        if snapshot.notStarted {
            if let entry = window.word(context &- UInt(layout.entryBeforeFirstContext)) { snapshot.resumeFunction = entry }
        } else if runJob == words.taskWaitThrowingResumeAdapter || runJob == words.taskFutureWaitResumeAdapter, snapshot.dependencyRecord != 0 {
            if let parent = window.word(context + 8) { snapshot.resumeFunction = parent }
        }
        if status & layout.statusRunning != 0 {
            snapshot.chainEnd = .running
        } else if let rejection = readChain(task, from: context, into: &snapshot) {
            return .failure(rejection)
        }
        return .success(snapshot)
    }

    /// The status records, innermost first: the dependency, the children, the groups.
    private mutating func readRecords(_ task: UInt, first: UInt, into snapshot: inout TaskSnapshot) -> TaskRejection? {
        var record = first
        var seen = 0
        var fields = [UInt](repeating: 0, count: 6)
        while record != 0 {
            guard record & 7 == 0, seen < 64 else { return .badStatusRecords }
            seen += 1
            guard fields.withUnsafeMutableBufferPointer({ window.words(record, into: $0) }) else { return .badStatusRecords }
            let kind = UInt8(truncatingIfNeeded: fields[0])
            switch kind {
            case layout.recordKindDependency:
                guard fields[layout.dependencyWaiter / 8] == task else { return .dependencyOfAnotherTask }
                let on = fields[layout.dependencyOn / 8]
                snapshot.dependencyRecord = record
                // The kind is a C enum, 32 bits: the word's upper half is padding, whatever the
                // task allocator's memory held before (a release build's slab is not zeroed).
                switch UInt32(truncatingIfNeeded: fields[layout.dependencyKind / 8]) {
                case 1: snapshot.dependency = .task(on)
                case 2: snapshot.dependency = .continuation(on)
                case 3: snapshot.dependency = .group(on)
                case 4: snapshot.dependency = .executor(identity: on, implementation: fields[layout.dependencyOn / 8 + 1])
                case let other: snapshot.dependency = .unknown(UInt(other))
                }
            case layout.recordKindChildTask, layout.recordKindTaskGroup:
                if kind == layout.recordKindTaskGroup { snapshot.groups.append(record - UInt(layout.groupRecordOffset)) }
                var child = fields[layout.recordFirstChild / 8]
                var listed = 0
                while child != 0, listed < childLimit {
                    guard child & 15 == 0 else { break }
                    snapshot.children.append(child)
                    listed += 1
                    guard let next = window.word(child + UInt(layout.taskSize + 8)) else { break }
                    child = next
                }
            default:
                break
            }
            record = fields[1]
        }
        return nil
    }

    /// The async call chain: from the resume context, each context's caller's resume function,
    /// following the parent links to the task's first context, which must lie in the task's own
    /// allocation (right after its header: a copy of a task elsewhere fails this).
    private mutating func readChain(_ task: UInt, from context: UInt, into snapshot: inout TaskSnapshot) -> TaskRejection? {
        var current = context
        var pair = [UInt](repeating: 0, count: 2)
        snapshot.chainEnd = .limit
        while snapshot.chain.count < chainLimit {
            guard pair.withUnsafeMutableBufferPointer({ window.words(current, into: $0) }) else {
                snapshot.chainEnd = .unreadable
                return nil
            }
            snapshot.chain.append(pair[1])
            if pair[0] == 0 {
                snapshot.chainEnd = .complete
                break
            }
            if pair[0] & 15 != 0 || pair[0] == current {
                snapshot.chainEnd = .invalid
                return nil
            }
            current = pair[0]
        }
        if snapshot.chainEnd == .complete, !(current > task && current - task < 0x4000) { return .firstContextElsewhere }
        return nil
    }
}

/// Why a candidate is not a live task (counted by reason in the dump).
enum TaskRejection: String, Error, Sendable, CaseIterable {
    case unreadable = "unreadable"
    case metadataChanged = "metadata changed"
    case notATask = "job kind not a task"
    case noID = "id 0"
    case complete = "complete (kept by a handle)"
    case badResumeContext = "resume context invalid"
    case childWithoutParent = "child without a parent"
    case badStatusRecords = "status records invalid"
    case dependencyOfAnotherTask = "dependency record of another task"
    case firstContextElsewhere = "first context outside the task's allocation"
    case duplicateID = "a second task with an id already read (a copy)"
}

/// Reads of this process's memory through one 4 KiB window (one system call per page, not per
/// word). Unsafe: raw addresses.
struct UnsafeMemoryWindow {
    /// A copy of the memory at `base` that reads are served from first (the scan's chunk).
    var view: (base: UInt, bytes: UnsafeRawBufferPointer)?
    private var base: UInt = 0
    private var valid = false
    private let page = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    private(set) var reads = 0

    /// Zeroed and freed.
    func release() {
        page.initializeMemory(as: UInt8.self, repeating: 0)
        page.deallocate()
    }

    /// The next read copies afresh.
    mutating func forget() { valid = false }

    mutating func words(_ address: UInt, into out: UnsafeMutableBufferPointer<UInt>) -> Bool {
        let bytes = out.count * 8
        if let view, address >= view.base, address - view.base <= UInt(view.bytes.count), UInt(view.bytes.count) - (address - view.base) >= UInt(bytes) {
            let offset = Int(address - view.base)
            UnsafeMutableRawBufferPointer(out).copyMemory(from: UnsafeRawBufferPointer(rebasing: view.bytes[offset..<offset + bytes]))
            return true
        }
        let pageBase = address & ~4095
        guard address - pageBase + UInt(bytes) <= 4096 else {
            reads += 1
            return UnsafeProcessMemory.copy(from: address, into: UnsafeMutableRawBufferPointer(out))
        }
        if !valid || base != pageBase {
            reads += 1
            base = pageBase
            valid = UnsafeProcessMemory.copy(from: pageBase, into: page)
            guard valid else { return false }
        }
        UnsafeMutableRawBufferPointer(out).copyMemory(from: UnsafeRawBufferPointer(rebasing: page[Int(address - pageBase)..<Int(address - pageBase) + bytes]))
        return true
    }

    mutating func word(_ address: UInt) -> UInt? {
        var value: UInt = 0
        let ok = withUnsafeMutablePointer(to: &value) { words(address, into: UnsafeMutableBufferPointer(start: $0, count: 1)) }
        return ok ? value : nil
    }
}
