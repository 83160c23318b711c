import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct HangReportCodingTests {
    @Test func roundTripsThroughJSON() throws {
        var report = ReportFixtures.report()
        report.repeats = HangReport.Repeats(count: 3, lastAt: report.startedAt.addingTimeInterval(60), totalDurationMs: 2100, maxDurationMs: 800)
        let decoded = try HangReport.decode(try report.encoded())
        // Dates travel with millisecond precision.
        #expect(decoded.id == report.id)
        #expect(decoded.samples == report.samples)
        #expect(decoded.frames == report.frames)
        #expect(decoded.context == report.context)
        #expect(decoded.capture == report.capture)
        #expect(decoded.repeats?.count == 3)
        #expect(abs(decoded.startedAt.timeIntervalSince(report.startedAt)) < 0.001)
        #expect(decoded.outcome == .recovered)
    }

    @Test func writesTheDocumentedTopLevelFields() throws {
        let object = try #require(try JSONSerialization.jsonObject(with: ReportFixtures.report().encoded()) as? [String: Any])
        for field in ["schema", "id", "service", "host", "pid", "thread", "startedAt", "durationMs", "thresholdMs",
                      "activity", "mode", "samples", "heaviestStack", "frames", "images", "context", "capture", "outcome",
                      "signature", "stacks"] {
            #expect(object[field] != nil, "missing \(field)")
        }
        #expect(object["schema"] as? String == "hangwatch.hang/1.8")
        #expect(object["startedAt"] as? String == "2026-11-18T11:06:40.123Z")
    }

    @Test func writesTheLabelsAndTheNameSignatureOf15AndReadsReportsWithout() throws {
        var report = ReportFixtures.report()
        report.labels = ["route": "GET /checkout", "tenant": "acme"]
        report.labelsOmitted = 2
        report.nameSignature = "0123456789abcdef"
        let object = try #require(try JSONSerialization.jsonObject(with: report.encoded()) as? [String: Any])
        #expect(object["labels"] as? [String: String] == ["route": "GET /checkout", "tenant": "acme"])
        #expect(object["labelsOmitted"] as? Int == 2)
        #expect(object["nameSignature"] as? String == "0123456789abcdef")
        let decoded = try HangReport.decode(try report.encoded())
        #expect(decoded.labels == report.labels && decoded.labelsOmitted == 2 && decoded.nameSignature == report.nameSignature)
        // A 1.4 report has none of them.
        var older = ReportFixtures.report()
        older.schema = "hangwatch.hang/1.4"
        let text = String(decoding: try older.encoded(), as: UTF8.self)
        #expect(!text.contains("labels") && !text.contains("nameSignature"))
        let read = try HangReport.decode(Data(text.utf8))
        #expect(read.labels == nil && read.labelsOmitted == nil && read.nameSignature == nil)
    }

    /// Schema 1.6: the CPU limit, throttled, stopped and paging fields, and their verdicts, round
    /// trip; a report without them (1.5) reads as before, and a verdict a reader does not know
    /// reads as `unknown`.
    @Test func writesTheLimitStopAndPagingFieldsOf16AndReadsReportsWithout() throws {
        var report = ReportFixtures.report()
        report.context.verdict = .throttled
        report.context.hostCpuCount = 8
        report.context.cpuLimit = HangReport.CPULimit(cores: 0.2, source: "cgroup v1 cpu.cfs_quota_us", path: "/sys/fs/cgroup/cpu/app")
        report.context.throttledMs = 640
        report.context.cgroupThrottledMs = 655.5
        report.context.throttledPeriods = 8
        report.context.stoppedMs = 2000
        report.context.stoppedBy = "cgroup freezer"
        report.context.stopEvidence = "cgroup.stat.local frozen_usec grew by 2000 ms"
        report.context.busyMs = 800
        report.context.majorFaults = 16384
        report.context.memoryStallMs = 1200
        report.context.memoryPressureSource = "system"
        let data = try report.encoded()
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let context = try #require(object["context"] as? [String: Any])
        #expect(context["verdict"] as? String == "throttled")
        #expect((context["cpuLimit"] as? [String: Any])?["source"] as? String == "cgroup v1 cpu.cfs_quota_us")
        #expect(context["stoppedBy"] as? String == "cgroup freezer" && context["majorFaults"] as? Int == 16384)
        #expect(try HangReport.decode(data).context == report.context)
        var paging = report
        paging.context.verdict = .paging
        #expect(try HangReport.decode(paging.encoded()).context.verdict == .paging)
        // Without them: nil, as in every report before 1.6.
        let plain = try HangReport.decode(try ReportFixtures.report().encoded()).context
        #expect(plain.cpuLimit == nil && plain.throttledMs == nil && plain.stoppedBy == nil && plain.busyMs == nil && plain.majorFaults == nil)
        #expect(!String(decoding: try ReportFixtures.report().encoded(), as: UTF8.self).contains("stoppedMs"))
        // A verdict of a later minor version.
        let future = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\"throttled\"", with: "\"swapped-out\"")
        #expect(try HangReport.decode(Data(future.utf8)).context.verdict == .unknown)
    }

    @Test func outcomeOfAFatalHangIsSpelledOut() throws {
        var report = ReportFixtures.report()
        report.outcome = .processExited
        let text = String(decoding: try report.encoded(), as: UTF8.self)
        #expect(text.contains("\"outcome\" : \"process exited during hang\""))
    }

    @Test func rejectsAFutureSchema() throws {
        var report = ReportFixtures.report()
        report.schema = "hangwatch.hang/2"
        #expect(throws: ReportReadError.unsupportedSchema("hangwatch.hang/2")) { try HangReport.decode(try report.encoded()) }
    }

    @Test func readsReportsWrittenBeforeStacksSaidWhyTheyStopped() throws {
        // A 1.0 report: no `truncation` or `framePointer` in its stacks.
        var report = ReportFixtures.report()
        report.schema = "hangwatch.hang/1"
        report.stacks = report.stacks.map { HangReport.Stack(frames: $0.frames, truncated: true) }
        let text = String(decoding: try report.encoded(), as: UTF8.self)
        #expect(!text.contains("truncation"))
        let read = try HangReport.decode(Data(text.utf8))
        #expect(read.schema == "hangwatch.hang/1")
        #expect(read.stacks.allSatisfy { $0.truncated && $0.truncation == nil && $0.framePointer == nil })
    }

    @Test func writesWhyAStackStoppedAndHowItsFramePointerWasFound() throws {
        var report = ReportFixtures.report()
        report.stacks = [HangReport.Stack(frames: [0], truncated: true, truncation: "frame pointer unproven", framePointer: nil),
                         HangReport.Stack(frames: [0], truncated: false, framePointer: "prologue")]
        let read = try HangReport.decode(try report.encoded())
        #expect(read.stacks[0].truncation == "frame pointer unproven")
        #expect(read.stacks[1].framePointer == "prologue")
    }

    @Test func acceptsMinorVersionsOfTheSameSchema() throws {
        var report = ReportFixtures.report()
        report.schema = "hangwatch.hang/1.4"
        #expect(try HangReport.decode(try report.encoded()).schema == "hangwatch.hang/1.4")
    }

    /// 1.5's waits round-trip; a verdict this version does not know reads as unknown.
    @Test func waitsAndTheDeadlockVerdictRoundTripAndAnUnknownVerdictReadsAsUnknown() throws {
        var report = ReportFixtures.report()
        report.context.verdict = .deadlocked
        report.waitsFor = HangReport.WaitsFor(
            kind: "mutex", address: "0x10", syscall: "futex", owner: "held",
            holder: HangReport.Holder(tid: 7, name: "peer", state: "S", syscall: "futex", verdict: "blocked", stack: 0),
            chain: [HangReport.ChainLink(tid: 7, name: "peer", kind: "mutex", address: "0x20", holder: HangReport.Holder(tid: 1))],
            deadlock: [1, 7])
        let read = try HangReport.decode(try report.encoded())
        #expect(read.waitsFor == report.waitsFor && read.context.verdict == .deadlocked)
        let future = String(decoding: try report.encoded(), as: UTF8.self).replacingOccurrences(of: "\"deadlocked\"", with: "\"levitating\"")
        #expect(try HangReport.decode(Data(future.utf8)).context.verdict == .unknown)
    }

    @Test func namesTheMissingField() throws {
        var object = try #require(try JSONSerialization.jsonObject(with: ReportFixtures.report().encoded()) as? [String: Any])
        object["durationMs"] = nil
        let data = try JSONSerialization.data(withJSONObject: object)
        do {
            _ = try HangReport.decode(data)
            Issue.record("decoded a report without durationMs")
        } catch let error as ReportReadError {
            #expect("\(error)".contains("durationMs"))
        }
    }

    @Test(arguments: ["", "{", "[]", "{\"schema\": 7}", "null", "{\"schema\":\"hangwatch.hang/1\"}"])
    func rejectsMalformedDocuments(_ text: String) {
        #expect(throws: ReportReadError.self) { try HangReport.decode(Data(text.utf8)) }
    }

    @Test func rejectsNonUTF8() {
        #expect(throws: ReportReadError.self) { try HangReport.decode(Data([0xff, 0xfe, 0x7b, 0x00])) }
    }
}
