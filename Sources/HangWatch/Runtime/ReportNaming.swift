import Foundation
import HangWatchReport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The ids of new reports (a hang's, a pool job's, a starvation's), one sequence per process
/// (`ProcessRuntime`): monitors sharing a directory never write the same file name.
final class ReportNaming: Sendable {
    private let sequence = Atomic<Int>(0)
    /// The last time put into an id, in milliseconds since 1970.
    private let lastMilliseconds = Atomic<Int64>(0)

    /// A new report's id: its start on the wall clock (`time(of:)`), the service, the pid and the
    /// sequence number.
    func nextID(start: Date, serviceName: String) -> String {
        let number = sequence.add(1, ordering: .relaxed).newValue
        return ReportTimestamp.compact(time(of: start)) + "-" + serviceName + "-" + String(getpid()) + "-" + String(number)
    }

    /// The time an id starts with: the hang's start on the wall clock, but never earlier than the
    /// previous id's. Ids sort oldest first, and retention removes the first ones: after the wall
    /// clock is set back, a new report must not pass for an old one.
    func time(of start: Date) -> Date {
        let wanted = Int64((start.timeIntervalSince1970 * 1000).rounded(.down))
        var previous = lastMilliseconds.load(ordering: .relaxed)
        while true {
            let chosen = max(wanted, previous + 1)
            let (exchanged, original) = lastMilliseconds.compareExchange(expected: previous, desired: chosen, ordering: .relaxed)
            if exchanged { return Date(timeIntervalSince1970: Double(chosen) / 1000) }
            previous = original
        }
    }
}
