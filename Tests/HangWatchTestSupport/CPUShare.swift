import Foundation
import Testing

/// What a thread got of a CPU over a stretch of a test: its run-queue wait (`schedstat`) against
/// the wall time. A test whose expectation needs a thread on a CPU whenever it is runnable (a
/// timing, a count of captures) checks it had that, and cancels itself saying so when the machine
/// did not give it, instead of failing on a timing it could not keep.
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

    /// Cancels the test, saying why, when the thread waited for a CPU more than `limit` of the
    /// time (the expectation `what` could not be judged).
    public func cancelIfStarved(limit: Double = 0.1, _ what: String) throws {
        let share = waitedShare
        if share > limit {
            try Test.cancel("the machine kept the thread off a CPU \(Int(share * 100)) % of the time: \(what) cannot be judged")
        }
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
