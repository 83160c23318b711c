import Foundation

/// What a thread got of a CPU over a stretch of a test: its run-queue wait (`schedstat`) against
/// the wall time. For the message of an expectation that depends on it, and for a control's
/// check (`ControlCheck.cannotRun`): a claim about the product is never excused by it.
public struct CPUShare {
    public let tid: Int32
    private let started: Date
    private let queuedBefore: UInt64?

    /// Starts measuring thread `tid` of this process (nil: the calling thread).
    public init(tid: Int32? = nil) {
        let tid = tid ?? Self.currentTID()
        self.tid = tid
        started = Date()
        queuedBefore = Self.runQueueNanoseconds(tid)
    }

    /// The share of the wall time since `init` the thread spent runnable but waiting for a CPU.
    public var waitedShare: Double {
        guard let before = queuedBefore, let now = Self.runQueueNanoseconds(tid) else { return 0 }
        let wall = max(1e-3, Date().timeIntervalSince(started))
        return Double(now &- before) / 1e9 / wall
    }

    static func runQueueNanoseconds(_ tid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/self/task/\(tid)/schedstat", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        return fields.count >= 2 ? UInt64(fields[1]) : nil
    }

    public static func currentTID() -> Int32 {
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return Int32(target.split(separator: "/").last ?? "") ?? 0
    }
}
