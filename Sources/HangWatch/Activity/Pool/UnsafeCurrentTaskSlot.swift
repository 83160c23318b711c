#if canImport(Glibc)
import Glibc
#endif

/// Which Swift task a pool thread runs now, read from outside that thread.
///
/// The concurrency runtime keeps each thread's current task in a thread-local word of
/// `libswift_Concurrency` (what `swift_task_getCurrent` returns). A pool thread finds the address of
/// its own word once, inside a probe job (a task): it asks the runtime for the current task and
/// looks for that pointer in its block of the library's thread-local storage (`dl_iterate_phdr`
/// gives the calling thread's block); exactly one word of the block must hold it. The task's id (a
/// 64-bit counter the runtime never reuses, unlike the task's memory) is read from the task at the
/// offsets Swift 6.3's `AsyncTask::getTaskId` uses, and only after the runtime's own
/// `swift_task_getJobTaskId` agreed with them on that task; a runtime with another layout gets no
/// slot, and jobs that compute are then not followed (see `HeldJobTracker`).
///
/// The pool watch then reads any attached thread's word, and the task's id, through the kernel
/// (`UnsafeProcessMemory`): the thread may exit, or the task end and its memory go, while it reads.
/// Unsafe: it reads raw memory at addresses derived from the runtime's private layout.
enum UnsafeCurrentTaskSlot {
    /// Where `AsyncTask::getTaskId` (Swift 6.3) finds the id's low and high 32 bits in a task.
    static let idLowOffset = 0x24
    static let idHighOffset = 0x90

    private typealias GetCurrent = @convention(c) () -> UnsafeMutableRawPointer?
    private typealias GetJobTaskID = @convention(c) (UnsafeMutableRawPointer) -> UInt64

    /// The runtime's entry points (C-compatible for these signatures on x86_64 and aarch64).
    private static let runtime: (getCurrent: GetCurrent, getJobTaskID: GetJobTaskID, code: UInt)? = {
        let anyImage: UnsafeMutableRawPointer? = nil  // glibc's RTLD_DEFAULT
        guard let current = dlsym(anyImage, "swift_task_getCurrent"), let taskID = dlsym(anyImage, "swift_task_getJobTaskId")
        else { return nil }
        return (unsafeBitCast(current, to: GetCurrent.self), unsafeBitCast(taskID, to: GetJobTaskID.self), UInt(bitPattern: current))
    }()

    /// The address of the calling thread's current-task word, or nil when the thread runs no task,
    /// the word is not found exactly once, the runtime's layout is not recognised
    /// (`SwiftTaskLayout`), or the runtime's id disagrees with the task's layout.
    static func locateOnCurrentThread() -> UInt? {
        guard SwiftTaskLayout.current.isReadable, let runtime, let task = runtime.getCurrent() else { return nil }
        let id = runtime.getJobTaskID(task)
        guard id != 0, UInt64(task.load(fromByteOffset: idLowOffset, as: UInt32.self)) == id & 0xffff_ffff,
            UInt64(task.load(fromByteOffset: idHighOffset, as: UInt32.self)) == id >> 32,
            let block = UnsafeThreadLocalWord.block(ofImageContaining: runtime.code)
        else { return nil }
        return UnsafeThreadLocalWord.locate(UInt(bitPattern: task), in: block)
    }

    /// The id of the task the calling thread runs now (two calls into the runtime); nil outside a
    /// task, or when the runtime has no such entry points.
    @inline(__always)
    static func currentTaskID() -> UInt64? {
        guard let runtime, let task = runtime.getCurrent() else { return nil }
        let id = runtime.getJobTaskID(task)
        return id == 0 ? nil : id
    }

    /// The id of the task the calling thread runs now, from its own current-task word `word` (as
    /// `locateOnCurrentThread` found it on this thread, the offsets checked then): two loads, no
    /// call; nil outside a task.
    @inline(__always)
    static func ownTaskID(word: UInt) -> UInt64? {
        guard let task = UnsafeRawPointer(bitPattern: UnsafeRawPointer(bitPattern: word)!.load(as: UInt.self)) else { return nil }
        let id = UInt64(task.load(fromByteOffset: idLowOffset, as: UInt32.self)) | UInt64(task.load(fromByteOffset: idHighOffset, as: UInt32.self)) << 32
        return id == 0 ? nil : id
    }

    /// The id of the task running now on the thread whose word is at `slot`: 0 when it runs none,
    /// nil when the word or the task could not be read (the thread or the task is gone).
    static func taskID(slot: UInt) -> UInt64? {
        guard let task = UnsafeProcessMemory.copy(UInt.self, at: slot) else { return nil }
        if task == 0 { return 0 }
        return withUnsafeTemporaryAllocation(byteCount: idHighOffset + 4, alignment: 8) { buffer -> UInt64? in
            guard UnsafeProcessMemory.copy(from: task, into: buffer) else { return nil }
            return UInt64(buffer.load(fromByteOffset: idLowOffset, as: UInt32.self))
                | UInt64(buffer.load(fromByteOffset: idHighOffset, as: UInt32.self)) << 32
        }
    }
}
