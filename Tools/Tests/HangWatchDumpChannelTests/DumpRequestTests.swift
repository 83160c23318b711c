import HangWatchReport
import HangWatchTestSupport
import Testing

@testable import HangWatchDumpChannel

/// A request's nonce says what it asks for: bit 47 set for the tasks, bit 46 for the recent
/// windows, neither for the threads; never 0, never past 48 bits (the signal's value carries the
/// dump tag above them), and its random part never 0.
@Suite struct DumpRequestTests {
    @Test func aTaskDumpsNonceHasBit47AndAThreadDumpsHasNot() {
        for _ in 0..<1000 {
            let tasks = DumpRequest.Kind.tasks.nonce()
            let threads = DumpRequest.Kind.threads.nonce()
            #expect(tasks & 1 << 47 != 0 && tasks < 1 << 48 && tasks & ((1 << 47) - 1) != 0)
            #expect(threads & 1 << 47 == 0 && threads != 0)
        }
    }

    /// A recent-window dump's nonce has bit 46 and not bit 47; the other kinds never set bit 46 (a
    /// monitor that knows recent-window dumps would read it as one).
    @Test func aRecentWindowDumpsNonceHasBit46AndNoOtherKindsHasIt() {
        let recent = (0..<1000).map { _ in DumpRequest.Kind.recent.nonce() }
        #expect(recent.allSatisfy { $0 & 1 << 46 != 0 && $0 & 1 << 47 == 0 && $0 & ((1 << 46) - 1) != 0 }, "\(recent.prefix(5))")
        let others = (0..<1000).flatMap { _ in [DumpRequest.Kind.threads.nonce(), DumpRequest.Kind.tasks.nonce()] }
        #expect(others.filter { $0 & 1 << 46 != 0 }.isEmpty, "\(others.filter { $0 & 1 << 46 != 0 }.prefix(5))")
    }

    /// A monitor that predates task dumps, or recent-window dumps, answers those with a thread
    /// dump: the command says so, names what shows the threads, and exits 1; an answer of the kind
    /// asked for passes.
    @Test func aThreadDumpAnsweringARecentOrTaskRequestIsToldApart() throws {
        var threads = ReportFixtures.report()
        threads.source = "dump"
        let recent = try #require(DumpRequest.mismatch(threads, asked: .recent, pid: 4242))
        #expect(recent.exitCode.rawValue == 1)
        #expect(
            recent.message
                == "process 4242 answered with a thread dump, not its recent windows: its HangWatch predates recent-window dumps (hangwatch dump 4242 shows its threads)")
        let tasks = try #require(DumpRequest.mismatch(threads, asked: .tasks, pid: 4242))
        #expect(tasks.exitCode.rawValue == 1 && tasks.message.contains("its HangWatch predates task dumps"))
        #expect(DumpRequest.mismatch(threads, asked: .threads, pid: 4242) == nil)
        var windows = threads
        windows.source = "recent"
        windows.recent = HangReport.Recent(sources: [])
        #expect(DumpRequest.mismatch(windows, asked: .recent, pid: 4242) == nil)
        #expect(DumpRequest.mismatch(windows, asked: .tasks, pid: 4242) != nil)
    }
}
