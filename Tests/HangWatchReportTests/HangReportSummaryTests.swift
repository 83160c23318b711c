import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct HangReportSummaryTests {
    @Test func fitsEightyColumnsAndNamesTheCulprit() {
        var report = ReportFixtures.report(frames: 20)
        report.heaviestStack?.frames[1].symbol = String(repeating: "VeryLongTypeName.", count: 10) + "function()"
        let text = HangReportSummary().render(report)
        for line in text.split(separator: "\n") {
            #expect(line.count <= 80, "too wide: \(line)")
        }
        #expect(text.contains("verdict: computing (on CPU 98%)"))
        #expect(text.contains("713 ms (threshold 250 ms)"))
        #expect(text.contains("... 8 more frames"))
    }

    @Test func explainsBlockedAndStoppedHangs() {
        var report = ReportFixtures.report()
        report.context.verdict = .blocked
        report.context.blockedIn = "futex"
        report.context.onCpuRatio = 0.01
        #expect(HangReportSummary.verdictLine(report) == "blocked in futex (on CPU 1%)")
        report.context.verdict = .stopped
        report.context.watchdogOversleepMs = 9800
        #expect(HangReportSummary.verdictLine(report) == "process stopped (watchdog woke 9800 ms late)")
    }

    @Test func showsFileAndLineWhenKnown() {
        let text = HangReportSummary().render(ReportFixtures.report())
        #expect(text.contains("billing.recompute() (Billing.swift:42)"))
    }
}
