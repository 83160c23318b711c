import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct ReportReaderTests {
    func directory() throws -> String {
        let path = ReportFixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func refusesFilesOverTheLimitWithoutReadingThem() throws {
        let path = try directory() + "/hang-big.json"
        FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x20, count: 4096))
        #expect(throws: ReportReadError.tooLarge(path: path, size: 4096, limit: 1024)) {
            try ReportReader(maxBytes: 1024).read(path: path)
        }
    }

    @Test func refusesSymlinksAndDoesNotBlockOnFIFOs() throws {
        let base = try directory()
        try FileManager.default.createSymbolicLink(atPath: base + "/hang-link.json", withDestinationPath: "/etc/hostname")
        #expect(throws: ReportReadError.notRegularFile(base + "/hang-link.json")) {
            try ReportReader().read(path: base + "/hang-link.json")
        }
        #expect(mkfifo(base + "/hang-fifo.json", 0o600) == 0)
        #expect(throws: ReportReadError.notRegularFile(base + "/hang-fifo.json")) {
            try ReportReader().read(path: base + "/hang-fifo.json")
        }
    }

    @Test func refusesAHardLinkedReportButNotItsOnlyName() throws {
        let base = try directory()
        let data = try ReportFixtures.report().encoded()
        FileManager.default.createFile(atPath: base + "/outside.json", contents: data)
        #expect(try ReportReader().read(path: base + "/outside.json").id == ReportFixtures.report().id)
        #expect(link(base + "/outside.json", base + "/hang-linked.json") == 0)
        #expect(throws: ReportReadError.hardLinked(path: base + "/hang-linked.json", names: 2)) {
            try ReportReader().read(path: base + "/hang-linked.json")
        }
        // Either name: the file has two.
        #expect(throws: ReportReadError.hardLinked(path: base + "/outside.json", names: 2)) {
            try ReportReader().read(path: base + "/outside.json")
        }
        #expect(try ReportReader(refusesHardLinks: false).readData(path: base + "/hang-linked.json") == data)
    }

    @Test func refusesTextThatIsNotUTF8AndSaysWhere() throws {
        var data = try ReportFixtures.report(service: "caf\u{e9}").encoded()
        let position = try #require(data.firstRange(of: Data("\"service\"".utf8))).upperBound + 2
        // A valid two-byte "é" elsewhere stays fine; a lone continuation byte does not.
        data.insert(0x80, at: position)
        #expect(throws: ReportReadError.malformed("byte \(position) is not UTF-8 text")) { try HangReport.decode(data) }
        data.remove(at: position)
        #expect(try HangReport.decode(data).service == "caf\u{e9}")
    }

    @Test func namesTheFileOfAMalformedReport() throws {
        let path = try directory() + "/hang-truncated.json"
        let data = try ReportFixtures.report().encoded()
        FileManager.default.createFile(atPath: path, contents: data.prefix(data.count / 2))
        do {
            _ = try ReportReader().read(path: path)
            Issue.record("read a truncated report")
        } catch let error as ReportReadError {
            #expect("\(error)".contains(path))
        }
    }

    /// Hostile JSON within the size limit: nesting 100,000 deep, NaN, duplicate keys, a 10 MB
    /// string, a million-element array. Each is refused with an error naming the file; none crashes
    /// the reader (a recursive parser could overflow the stack on the deep one).
    @Test(arguments: [
        ("deep", String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)),
        ("nan", #"{"schema": NaN}"#),
        ("duplicate", #"{"schema":"hangwatch.hang/1","schema":"other"}"#),
        ("huge-string", #"{"schema":""# + String(repeating: "x", count: 10_000_000) + #""}"#),
        ("million-frames", #"{"schema":"hangwatch.hang/1","frames":["# + Array(repeating: "{}", count: 1_000_000).joined(separator: ",") + "]}"),
    ])
    func refusesHostileJSONWithAnErrorNotACrash(_ name: String, _ text: String) throws {
        let path = try directory() + "/hang-\(name).json"
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        do {
            _ = try ReportReader().read(path: path)
            Issue.record("read a hostile report: \(name)")
        } catch {
            let message = "\(error)"
            #expect(message.contains(path), "\(name): \(message.prefix(300))")
            // Error messages quote at most a little of what they refuse.
            #expect(message.count < 2_000, "\(name): \(message.count) characters")
        }
    }

    @Test func reportsAMissingFile() {
        #expect(throws: ReportReadError.notFound("/nonexistent/hang-x.json")) {
            try ReportReader().read(path: "/nonexistent/hang-x.json")
        }
    }
}
