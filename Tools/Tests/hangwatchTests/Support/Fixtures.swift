import Foundation
import HangWatchReport
import HangWatchTestSupport
import ToolsTestSupport

/// A directory of its own for one test, holding copies of the demo's reports (and whatever the
/// test adds), with an index cache beside it. Removed when the test is done with it.
final class Fixture {
    let root: String
    var directory: String { root + "/reports" }
    var cache: String { root + "/cache" }

    init(withDemoReports: Bool = true, _ name: String = #function) throws {
        root = FileManager.default.temporaryDirectory.path + "/hangwatch-cli-\(getpid())-" + name.filter { $0.isLetter }.prefix(40)
            + "-" + UUID().uuidString.prefix(6)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if withDemoReports {
            let source = try DemoReports.directory.get()
            for name in try FileManager.default.contentsOfDirectory(atPath: source) where name.hasSuffix(".json") {
                try FileManager.default.copyItem(atPath: source + "/" + name, toPath: directory + "/" + name)
            }
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// `hangwatch arguments… --dir <this directory>` (the directory is added unless told not to).
    @discardableResult
    func hangwatch(_ arguments: String..., withDirectory: Bool = true, environment: [String: String] = [:]) throws -> CommandResult {
        try hangwatch(arguments, withDirectory: withDirectory, environment: environment)
    }

    @discardableResult
    func hangwatch(_ arguments: [String], withDirectory: Bool = true, environment: [String: String] = [:]) throws -> CommandResult {
        try Hangwatch.run(arguments + (withDirectory ? ["--dir", directory] : []), cache: cache, environment: environment)
    }

    /// Writes `bytes` as a report file named `name` (a report name unless given one).
    @discardableResult
    func write(_ bytes: Data, name: String) throws -> String {
        let path = directory + "/" + name
        guard FileManager.default.createFile(atPath: path, contents: bytes) else { throw CocoaError(.fileWriteUnknown) }
        return path
    }

    var reportPaths: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
            .map { directory + "/" + $0 }
    }
}

/// Hand-made files a report reader must survive, each named for what is wrong with it.
enum BadReports {
    /// Each file with what the reader's one-line warning must say about it.
    static func all(basedOn report: Data) -> [(name: String, bytes: Data, reason: String)] {
        var futureSchema = try! JSONSerialization.jsonObject(with: report) as! [String: Any]
        futureSchema["schema"] = "hangwatch.hang/9"
        var wrongSchema = try! JSONSerialization.jsonObject(with: report) as! [String: Any]
        wrongSchema["durationMs"] = "long"
        var nonUTF8 = report
        let service = nonUTF8.firstRange(of: Data("\"demo\"".utf8))!
        nonUTF8.replaceSubrange(service.lowerBound + 1..<service.lowerBound + 1, with: [0xff, 0xfe, 0xc3])
        return [
            ("hang-20000101T000000000Z-bad-1-1.json", report.prefix(report.count / 2), "truncated"),
            ("hang-20000101T000000000Z-bad-1-2.json", Data(), "empty"),
            ("hang-20000101T000000000Z-bad-1-3.json", Data(repeating: UInt8(ascii: " "), count: Int(ReportReader.defaultMaxBytes) + 1), "huge"),
            ("hang-20000101T000000000Z-bad-1-4.json", Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8), "deeply nested"),
            ("hang-20000101T000000000Z-bad-1-5.json", try! JSONSerialization.data(withJSONObject: wrongSchema), "wrong schema"),
            ("hang-20000101T000000000Z-bad-1-6.json", try! JSONSerialization.data(withJSONObject: futureSchema), "future schema"),
            ("hang-20000101T000000000Z-bad-1-7.json", nonUTF8, "not UTF-8"),
            ("hang-20000101T000000000Z-bad-1-8.json", Data("{\"traceEvents\": []}".utf8), "not a report"),
        ]
    }
}
