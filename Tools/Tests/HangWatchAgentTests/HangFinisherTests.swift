import Foundation
@_spi(Internal) import HangWatchReport
import Testing

@testable import HangWatchAgent

@Suite(.serialized) struct HangFinisherTests {
    @Test func aProvisionalReportOfAKilledProcessIsFinished() throws {
        let fixture = try SpoolFixture()
        let child = try ChildProcess()
        let file = try fixture.report(
            service: "billing", minutesAgo: 1, sequence: 1, pid: child.pid, startTicks: child.startTicks, outcome: .ongoing)
        let finisher = HangFinisher(spool: fixture.spool)
        // Alive: left alone, byte for byte.
        let before = try Data(contentsOf: URL(fileURLWithPath: fixture.spool.path(of: file)))
        #expect(try finisher.finishIfOrphaned(file) == .leftAlone)
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.spool.path(of: file))) == before)
        // Stopped is still alive.
        child.kill(SIGSTOP)
        #expect(try finisher.finishIfOrphaned(file) == .leftAlone)

        child.killAndReap()
        let noticed = Date()
        guard case .finished(let finished) = try finisher.finishIfOrphaned(file, now: noticed) else {
            Issue.record("not finished")
            return
        }
        let onDisk = try ReportReader().read(path: fixture.spool.path(of: file))
        // What was returned is what was written (times to the millisecond).
        #expect(onDisk.id == finished.id && onDisk.outcome == finished.outcome && onDisk.durationMs == finished.durationMs)
        #expect(onDisk.outcome == .processExited)
        #expect(onDisk.processExit?.reason == "gone")
        #expect(onDisk.processExit.map { abs($0.noticedAt.timeIntervalSince(noticed)) < 0.01 } == true)
        // It lasted at least until its last sample (450 ms in), and says so.
        #expect(onDisk.durationMs == 450)
        #expect(onDisk.endedAt.map { abs($0.timeIntervalSince(onDisk.startedAt) - 0.45) < 0.001 } == true)
        #expect(onDisk.processExit?.lastSeenAt == onDisk.endedAt)
        #expect(ReportValidator().problems(onDisk).isEmpty)
        // Finished once: a second look leaves it alone.
        let again = try #require(fixture.spool.file(service: "billing", name: file.name))
        #expect(try finisher.finishIfOrphaned(again) == .leftAlone)
    }

    @Test func aReusedPidIsNotTheSameProcess() throws {
        let fixture = try SpoolFixture()
        let own = try #require(ProcStat.read(pid: getpid()))
        let file = try fixture.report(
            service: "cart", minutesAgo: 1, sequence: 1, pid: getpid(), startTicks: own.startTimeTicks + 1, outcome: .ongoing)
        guard case .finished(let report) = try HangFinisher(spool: fixture.spool).finishIfOrphaned(file) else {
            Issue.record("not finished")
            return
        }
        #expect(report.processExit?.reason == "pid reused")
        #expect(HangFinisher.exitReason(pid: getpid(), startTimeTicks: own.startTimeTicks, status: own) == nil)
        #expect(HangFinisher.exitReason(pid: getpid(), startTimeTicks: 0, status: own) == nil)
        #expect(HangFinisher.exitReason(pid: 1, startTimeTicks: 5, status: ProcStat(state: "Z", startTimeTicks: 5)) == "gone")
    }

    @Test func finishedReportsAndChangedFilesAreLeftAlone() throws {
        let fixture = try SpoolFixture()
        let recovered = try fixture.report(service: "a", minutesAgo: 1, sequence: 1, pid: 999_999, outcome: .recovered)
        #expect(try HangFinisher(spool: fixture.spool).finishIfOrphaned(recovered) == .leftAlone)
        // Rewritten by its monitor since the scan: the agent does not overwrite it.
        var scanned = try fixture.report(service: "a", minutesAgo: 1, sequence: 2, pid: 999_999, outcome: .ongoing)
        scanned.size += 1
        #expect(throws: (any Error).self) { try HangFinisher(spool: fixture.spool).finishIfOrphaned(scanned) }
        #expect(try ReportReader().read(path: fixture.spool.path(of: scanned)).outcome == .ongoing)
    }
}
