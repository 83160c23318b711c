import Foundation
import HangWatchReport
import HangWatchSymbolication
import HangWatchTestSupport
import Testing

/// Labels end to end (`hangwatch-faults labels`, LabelScenario.swift): a service's hangs carry the
/// labels in effect on `RunLoop.main`, nested, on the main actor, in a pool job, after an `await`
/// that resumed on another thread, and set synchronously inside a task; a hang right after,
/// outside them, carries none.
@Suite(.serialized) struct LabelScenarioTests {
    struct Printed: Decodable {
        var hopEntered: Int32
        var hopHung: Int32
        var reportsWritten: Int
    }

    @Test func everyHangCarriesTheLabelsInEffectAndNoneOutside() throws {
        let directory = ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let host = try FaultHost(["labels", "--reports", directory])
        let outcome = host.finish(within: 90)
        let status = try #require(outcome.status, "the scenario was killed: \(outcome.standardError)")
        try #require(status == 0, "\(outcome.standardOutput)\(outcome.standardError)")
        let line = try #require(outcome.standardOutput.split(separator: "\n").last)
        let printed = try JSONDecoder().decode(Printed.self, from: Data(line.utf8))
        #expect(printed.reportsWritten == 8)

        let symbolicator = Symbolicator()
        let reports = try ReportStore(directory: directory).list().map { file -> HangReport in
            var report = try ReportReader().read(path: file.path)
            symbolicator.symbolicate(&report)
            return report
        }
        /// The report whose heaviest stack runs `function`.
        func report(_ function: String) throws -> HangReport {
            let matching = reports.filter { report in
                (report.heaviestStack?.frames ?? []).contains { $0.symbol?.contains("." + function + "(") == true }
            }
            return try #require(matching.first, "no report in \(function): \(reports.map { $0.heaviestStack?.frames.compactMap(\.symbol).prefix(3) ?? [] })")
        }
        let expected: [(function: String, source: String, labels: [String: String]?)] = [
            ("spinLabelledOnRunLoop", "runloop", ["route": "run-loop", "tenant": "acme"]),
            ("spinUnlabelledOnRunLoop", "runloop", nil),
            ("spinNestedOnRunLoop", "runloop", ["route": "inner", "tenant": "acme", "request": "42"]),
            ("spinOnMainActor", "runloop", ["route": "main-actor"]),
            ("blockLabelledPoolJob", "pool-job", ["route": "pool-job", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"]),
            ("blockUnlabelledPoolJob", "pool-job", nil),
            ("blockAfterHop", "pool-job", ["route": "after-hop"]),
            ("blockSyncLabelsInPoolJob", "pool-job", ["route": "sync-in-task"]),
        ]
        for (function, source, labels) in expected {
            let found = try report(function)
            #expect(found.source == source, "\(function): \(found.source)")
            #expect(found.labels == labels, "\(function): \(found.labels ?? [:])")
            #expect(found.labelsOmitted == nil)
        }
        // The hop's hang was on another thread than the one the task entered its labels on.
        #expect(printed.hopEntered != 0 && printed.hopHung != printed.hopEntered, "\(printed)")
        #expect(try report("blockAfterHop").thread.tid == printed.hopHung)
    }
}
