import Foundation
import HangWatchTestSupport
import Testing

/// What `make test` says is what it did: every skip has a reason, a test the docs cite is skipped
/// only from the reviewed list, a broken event stream fails the phase, and no test passes with
/// its check skipped behind a privilege check (scripts/test-all, scripts/test-events).
@Suite struct TestRunHonestyTests {
    static let root = CodeStructureTests.root

    /// Every Swift file under the two packages' test folders, with its path from the root.
    static func testSources() throws -> [(path: String, text: String)] {
        var files: [(String, String)] = []
        for folder in ["Tests", "Tools/Tests"] {
            let base = root.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(atPath: base.path) else { continue }
            for case let path as String in walker where path.hasSuffix(".swift") {
                files.append(("\(folder)/\(path)", try String(contentsOf: base.appendingPathComponent(path), encoding: .utf8)))
            }
        }
        return files
    }

    @Test func everySkipTraitSaysWhy() throws {
        var bare: [String] = []
        for file in try Self.testSources() {
            for (number, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(".enabled(if:") || line.contains(".disabled(") {
                // The reason is the trait's comment: a string literal in the same trait.
                if !line.contains("\"") { bare.append("\(file.path):\(number + 1)") }
            }
        }
        #expect(bare.isEmpty, "skip traits without a reason: \(bare)")
    }

    /// A check behind `if geteuid() == 0 { return }` passes with nothing checked where CI runs.
    @Test func noTestReturnsEarlyOnAPrivilegeCheck() throws {
        // A bare `return` (nothing run instead) in the branch a user id decides.
        let pattern = #"(geteuid|getuid)\(\)[^{]*\{\s*return\s*\}"#
        var early: [String] = []
        for file in try Self.testSources() {
            for (number, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") && line.range(of: pattern, options: .regularExpression) != nil {
                early.append("\(file.path):\(number + 1)")
            }
        }
        #expect(early.isEmpty, "\(early)")
    }

    /// Each reviewed skip names a test that exists (a renamed test must not leave a stale pass).
    @Test func everyReviewedSkipNamesATestThatExists() throws {
        let list = try String(contentsOf: Self.root.appendingPathComponent("Tests/reviewed-skips"), encoding: .utf8)
        let names = list.split(separator: "\n").map { $0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0] }
            .compactMap { line -> String? in
                let name = line.split(separator: ":", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                return name.isEmpty ? nil : name
            }
        try #require(!names.isEmpty)
        let sources = try Self.testSources()
        for name in names {
            let parts = name.split(separator: ".")
            try #require(parts.count == 2, "\(name): not Suite.function")
            let suite = String(parts[0]), function = String(parts[1])
            let defining = sources.filter { $0.text.contains("struct \(suite)") || $0.text.contains("extension \(suite)") }
            #expect(defining.contains { $0.text.contains("func \(function)(") }, "\(name) is on the reviewed list but no such test exists")
        }
    }

    // MARK: scripts/test-events, on streams written here

    /// A repository of its own: a README citing one test, a reviewed list naming another.
    static func fixtureRepository() throws -> String {
        let repo = ReportFixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: repo + "/Tests", withIntermediateDirectories: true)
        try "The claim is checked by `ClaimTests.theClaimHolds` and every test of `CitedSuite`.\n"
            .write(toFile: repo + "/README.md", atomically: true, encoding: .utf8)
        try "# reviewed\nClaimTests.theReviewedClaimHolds: the kernel refuses it here\n"
            .write(toFile: repo + "/Tests/reviewed-skips", atomically: true, encoding: .utf8)
        return repo
    }

    static func event(_ kind: String, test: String, comment: String) -> String {
        let payload: [String: Any] = [
            "kind": kind, "testID": "Module.\(test)/File.swift:1:1", "_comments": [comment],
            "messages": [["symbol": "skip", "text": comment]],
        ]
        let data = try! JSONSerialization.data(withJSONObject: ["kind": "event", "version": 0, "payload": payload])
        return String(decoding: data, as: UTF8.self)
    }

    static let runEnded = #"{"kind":"event","version":0,"payload":{"kind":"runEnded","messages":[]}}"#

    static func testEvents(_ lines: [String]?, repo: String) throws -> (status: Int32, output: String, error: String) {
        let events = repo + "/events.jsonl"
        if let lines { try lines.joined(separator: "\n").write(toFile: events, atomically: true, encoding: .utf8) }
        let run = try ExecutableRun.run(Self.root.appendingPathComponent("scripts/test-events").path, [events, repo])
        return (run.status, run.output, run.errors)
    }

    @Test func aSkippedTestIsTaggedByWhetherTheDocsCiteItAndWhetherItsSkipWasReviewed() throws {
        let repo = try Self.fixtureRepository()
        defer { try? FileManager.default.removeItem(atPath: repo) }
        let run = try Self.testEvents(
            [
                Self.event("testSkipped", test: "ClaimTests/theClaimHolds()", comment: "no io_uring"),
                Self.event("testSkipped", test: "ClaimTests/theReviewedClaimHolds()", comment: "no io_uring"),
                Self.event("testSkipped", test: "CitedSuite/anyOfItsTests()", comment: "no root"),
                Self.event("testSkipped", test: "OtherTests/notNamedAnywhere()", comment: "no go"),
                Self.event("testCancelled", test: "OtherTests/aControl()", comment: "the control could not run: busy"),
                Self.runEnded,
            ], repo: repo)
        #expect(run.status == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(lines.contains(["skipped", "ClaimTests.theClaimHolds", "no io_uring", "unreviewed"]), "\(lines)")
        #expect(lines.contains(["skipped", "ClaimTests.theReviewedClaimHolds", "no io_uring", "reviewed"]), "\(lines)")
        #expect(lines.contains(["skipped", "CitedSuite.anyOfItsTests", "no root", "unreviewed"]), "\(lines)")
        #expect(lines.contains(["skipped", "OtherTests.notNamedAnywhere", "no go", "uncited"]), "\(lines)")
        #expect(lines.contains(["cancelled", "OtherTests.aControl", "the control could not run: busy"]), "\(lines)")
        #expect(lines.count == 5, "\(lines)")
    }

    @Test func aMissingEmptyOrCutShortEventStreamIsAnError() throws {
        let repo = try Self.fixtureRepository()
        defer { try? FileManager.default.removeItem(atPath: repo) }
        let missing = try Self.testEvents(nil, repo: repo)
        #expect(missing.status == 2 && missing.error.contains("cannot be read"), "\(missing)")
        let empty = try Self.testEvents([], repo: repo)
        #expect(empty.status == 2 && empty.error.contains("is empty"), "\(empty)")
        // Cancellations in a stream that never ended: the rest of the run is unknown.
        let cut = try Self.testEvents([Self.event("testCancelled", test: "A/b()", comment: "the control could not run: x")], repo: repo)
        #expect(cut.status == 2 && cut.error.contains("never says the run ended"), "\(cut)")
        #expect(cut.output.isEmpty)
    }
}
