import Foundation
import HangWatchReport
import Testing

@testable import HangWatchAgent

@Suite struct FinishedHangTests {
    static func report(durationMs: Double, outcome: HangReport.Outcome = .recovered, repeats: HangReport.Repeats? = nil) -> HangReport {
        var report = SpoolFixture.report(
            id: "20260101T000000000Z-billing-42-1", service: "billing", start: Date(timeIntervalSince1970: 1_767_225_600), pid: 42,
            startTicks: 1, outcome: outcome == .ongoing ? .ongoing : .recovered)
        report.durationMs = durationMs
        report.outcome = outcome
        report.repeats = repeats
        return report
    }

    static func hang(_ report: HangReport, alreadyCounted: Int = 0) -> FinishedHang? {
        FinishedHang.newHangs(in: report, service: "s", alreadyCounted: alreadyCounted, path: "/p", severeAfter: .seconds(2))
    }

    @Test func severityFollowsDurationAndFate() {
        #expect(Self.hang(Self.report(durationMs: 300))?.severity == .moderate)
        #expect(Self.hang(Self.report(durationMs: 1999))?.severity == .moderate)
        #expect(Self.hang(Self.report(durationMs: 2000))?.severity == .severe)
        #expect(Self.hang(Self.report(durationMs: 300, outcome: .processExited))?.severity == .fatal)
        #expect(Self.hang(Self.report(durationMs: 300, outcome: .ongoing)) == nil)
    }

    @Test func aDebuggersPauseIsNoHang() {
        var paused = Self.report(durationMs: 5000)
        paused.context.verdict = .debugger
        #expect(!FinishedHang.counts(paused))
        #expect(Self.hang(paused) == nil)
    }

    /// Busy time only: a hang whose process was frozen or stopped for part of it counts for its busy
    /// part (its severity too), and one whose busy part is under its threshold is no hang at all.
    @Test func aStopIsNotCountedAsHangTime() throws {
        var frozen = Self.report(durationMs: 5800)
        frozen.context.verdict = .stopped
        frozen.context.stoppedMs = 5000
        frozen.context.stoppedBy = "cgroup freezer"
        frozen.context.busyMs = 800
        let hang = try #require(Self.hang(frozen))
        #expect(abs(hang.durationSeconds - 0.8) < 1e-9 && hang.severity == .moderate && hang.verdictKind == .stopped)
        // Frozen for all but 100 ms of a 250 ms threshold: a freeze, not a hang.
        var idle = frozen
        idle.context.stoppedMs = 5700
        #expect(!FinishedHang.counts(idle) && Self.hang(idle) == nil)
        // A report that says nothing of a stop is its duration, as before 1.6.
        #expect(try #require(Self.hang(Self.report(durationMs: 2500))).severity == .severe)
        // A file's nonsense: a negative or infinite stop is none; a stop longer than the hang leaves 0.
        var odd = frozen
        odd.context.stoppedMs = -1
        #expect(FinishedHang.busyMilliseconds(odd) == 5800)
        odd.context.stoppedMs = .infinity
        #expect(FinishedHang.busyMilliseconds(odd) == 5800)
        odd.context.stoppedMs = 9000
        #expect(FinishedHang.busyMilliseconds(odd) == 0 && !FinishedHang.counts(odd))
    }

    @Test func theThrottledTimeIsTheReportsOwnHangsAndAtMostItsBusyTime() throws {
        var throttled = Self.report(durationMs: 800, repeats: HangReport.Repeats(count: 2, lastAt: Date(), totalDurationMs: 1600, maxDurationMs: 800))
        throttled.context.verdict = .throttled
        throttled.context.throttledMs = 640
        let first = try #require(Self.hang(throttled))
        #expect(abs(first.throttledSeconds - 0.64) < 1e-9 && first.verdictKind == .throttled)
        // Repeats counted later carry none (the report keeps no throttled time of theirs).
        #expect(try #require(Self.hang(throttled, alreadyCounted: 1)).throttledSeconds == 0)
        throttled.context.throttledMs = 1e300
        #expect(try #require(Self.hang(throttled)).throttledSeconds == 0.8)
    }

    @Test func foldedRepeatsCountOnceEach() throws {
        let repeats = HangReport.Repeats(count: 3, lastAt: Date(), totalDurationMs: 1500, maxDurationMs: 600)
        let report = Self.report(durationMs: 500, repeats: repeats)
        let first = try #require(Self.hang(report))
        #expect(first.count == 4)
        #expect(abs(first.durationSeconds - 0.5) < 1e-9)
        let later = try #require(Self.hang(report, alreadyCounted: 2))
        #expect(later.count == 2)
        #expect(abs(later.durationSeconds - 0.5) < 1e-9)
        #expect(Self.hang(report, alreadyCounted: 4) == nil)
    }

    @Test func theHangCarriesTheReportsFacts() throws {
        let report = Self.report(durationMs: 712.4)
        let hang = try #require(FinishedHang.newHangs(in: report, service: "billing", alreadyCounted: 0, path: "/spool/billing/x.json", severeAfter: .seconds(2)))
        #expect(hang.service == "billing" && hang.reportedService == "billing")
        #expect(hang.reportID == report.id && hang.pid == 42 && hang.reportPath == "/spool/billing/x.json")
        #expect(hang.signature == report.signature && hang.thresholdMs == 250 && hang.onCpuRatio == 1)
        #expect(hang.headline.hasPrefix("billing hung 712 ms"), "\(hang.headline)")
    }

    /// A report file may say anything JSON allows: Int.max repeats, a duration of 1.7e308, a
    /// negative count. None of it may trap the agent (its counts are summed over the spool).
    @Test func absurdCountsAndDurationsFromAFileDoNotTrapTheAgent() throws {
        let huge = Self.report(durationMs: 1.7e308, repeats: HangReport.Repeats(count: Int.max, lastAt: Date(), totalDurationMs: 0, maxDurationMs: 0))
        #expect(FinishedHang.hangCount(huge) == 1 + FinishedHang.maxRepeats)
        #expect(Int.max / FinishedHang.hangCount(huge) > 1_000_000, "a million such reports still add up")
        let hang = try #require(Self.hang(huge))
        #expect(hang.count == FinishedHang.hangCount(huge))
        #expect(hang.headline.contains(" hung 1.55e+296 ms"), "\(hang.headline)")
        let negative = Self.report(durationMs: 300, repeats: HangReport.Repeats(count: -5, lastAt: Date(), totalDurationMs: 0, maxDurationMs: 0))
        #expect(FinishedHang.hangCount(negative) == 1)
        #expect(FinishedHang.whole(-1e300) == "-1e+300" && FinishedHang.whole(712.5) == "713")
    }

    /// The record says which signature groups the hang, and carries its labels; once the agent
    /// named the frames, the hang is grouped by names, as `hangwatch top` groups it.
    @Test func theRecordCarriesTheGroupingAndTheLabelsAndIsRegroupedOnceNamed() throws {
        var report = Self.report(durationMs: 400)
        report.labels = ["route": "GET /checkout", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"]
        let hang = try #require(Self.hang(report))
        #expect(hang.signature == report.grouping.signature && hang.signatureKind == report.grouping.kind)
        #expect(hang.labels == report.labels)
        let attributes = HangLogRecord.attributes(of: hang)
        #expect(attributes["hangwatch.label.route"] == "GET /checkout")
        #expect(attributes["hangwatch.label.traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        #expect(attributes["hangwatch.hang.signature_kind"] == "\(report.grouping.kind.rawValue)")
        #expect(hang.signatureKind == .addresses)
        var named = report
        named.frames[0].symbol = "billing.recompute() -> ()"
        named.heaviestStack?.frames[0].symbol = "billing.recompute() -> ()"
        let renamed = hang.renamed(from: named)
        #expect(renamed.signatureKind == .names && renamed.signature == named.grouping.signature)
        #expect(renamed.signature != report.signature)
    }

    /// The record says where the process that hung ran, by the semantic conventions' names, and
    /// only what its report says.
    @Test func theRecordNamesThePodAndContainerOfItsReport() throws {
        var report = Self.report(durationMs: 400)
        report.resource = WorkloadIdentity(
            containerID: String(repeating: "3f2a1b4c", count: 8), podName: "billing-a", namespaceName: "shop", podUID: "0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11",
            containerName: "app", nodeName: "node-3")
        let attributes = HangLogRecord.attributes(of: try #require(Self.hang(report)))
        #expect(attributes["container.id"] == "\(String(repeating: "3f2a1b4c", count: 8))")
        #expect(attributes["k8s.pod.name"] == "billing-a" && attributes["k8s.namespace.name"] == "shop" && attributes["k8s.container.name"] == "app")
        #expect(attributes["k8s.pod.uid"] == "0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11" && attributes["k8s.node.name"] == "node-3")
        report.resource = WorkloadIdentity(nodeName: "node-3")
        let nodeOnly = HangLogRecord.attributes(of: try #require(Self.hang(report)))
        #expect(nodeOnly["k8s.node.name"] == "node-3" && nodeOnly["k8s.pod.name"] == nil && nodeOnly["container.id"] == nil)
        let plain = HangLogRecord.attributes(of: try #require(Self.hang(Self.report(durationMs: 400))))
        #expect(!plain.keys.contains { $0.hasPrefix("k8s.") || $0.hasPrefix("container.") }, "\(plain.keys)")
    }
}
