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

    @Test func namesTheLabelsOnOneLineWithinEightyColumns() {
        var report = ReportFixtures.report()
        report.labels = ["tenant": "acme", "route": "GET /checkout"]
        #expect(HangReportSummary().render(report).contains("  labels: route=GET /checkout, tenant=acme"))
        report.labels = ["route": String(repeating: "/x", count: 60)]
        let line = HangReportSummary().render(report).split(separator: "\n").first { $0.hasPrefix("  labels: ") }
        #expect(line?.count == 80 && line?.hasSuffix("…") == true)
        #expect(!HangReportSummary().render(ReportFixtures.report()).contains("labels:"))
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

    /// A sample in a linker stub of the service's image (a call on its way to the C library or the
    /// runtime) names the service's function that made the call, not the stub.
    @Test func theCulpritIsNeverALinkerStub() {
        var report = ReportFixtures.report(frames: 4)
        // Frame 0 in libc, 1 `billing.recompute()`: the culprit as before.
        #expect(FrameNaming.topAppFrame(report)?.symbol == "billing.recompute() -> ()")
        // Frame 0 now a stub in the service's own image, then recompute.
        report.heaviestStack?.frames[0].image = 0
        report.heaviestStack?.frames[0].symbol = "swift_retain@plt"
        #expect(FrameNaming.topAppFrame(report)?.symbol == "billing.recompute() -> ()")
        report.heaviestStack?.frames[0].symbol = SymbolName.unknownLinkerStub
        #expect(FrameNaming.topAppFrame(report)?.symbol == "billing.recompute() -> ()")
        // Shown for what it is.
        #expect(FrameNaming.displayName(HangReport.Frame(address: "0x1", image: nil, offset: nil, symbol: "swift_retain@plt"), images: []) == "swift_retain (PLT stub)")
    }
}
