import Foundation
import Logging
import Testing

@testable import HangWatchAgent

@Suite struct JournalLogHandlerTests {
    static func event(_ level: Logger.Level, _ message: Logger.Message, _ metadata: Logger.Metadata = [:]) -> LogEvent {
        LogEvent(level: level, message: message, metadata: metadata, source: nil, file: #fileID, function: #function, line: #line)
    }

    @Test func theJournalStyleIsChosenOnlyWhenJournalStreamNamesTheStream() throws {
        let path = FileManager.default.temporaryDirectory.path + "/hangwatch-journal-\(getpid())-\(UUID().uuidString.prefix(6))"
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        defer { unlink(path) }
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var info = stat()
        try #require(fstat(fd, &info) == 0)
        typealias Style = JournalLogHandler.Style
        #expect(Style.forStream(fd, environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]) == .journal)
        #expect(Style.forStream(fd, environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino + 1)"]) == .plain)
        #expect(Style.forStream(fd, environment: ["JOURNAL_STREAM": "\(info.st_dev + 1):\(info.st_ino)"]) == .plain)
        for garbage in ["", ":", "1", "a:b", "\(info.st_dev):\(info.st_ino):0", " \(info.st_dev):\(info.st_ino)"] {
            #expect(Style.forStream(fd, environment: ["JOURNAL_STREAM": garbage]) == .plain, "\(garbage)")
        }
        #expect(Style.forStream(fd, environment: [:]) == .plain)
        // A closed descriptor is no stream at all.
        #expect(Style.forStream(-1, environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]) == .plain)
    }

    @Test func linesCarryAPriorityForTheJournalAndTheLevelElsewhere() {
        let levels = JournalLogHandler.LevelBox(.info)
        let journal = JournalLogHandler(label: "t", level: levels, style: .journal)
        let plain = JournalLogHandler(label: "t", level: levels, style: .plain)
        let event = Self.event(.warning, "spool entry left alone", ["hangwatch.path": "/a b", "hangwatch.reason": "a FIFO"])
        #expect(journal.line(event) == "<4>spool entry left alone hangwatch.path=\"/a b\" hangwatch.reason=\"a FIFO\"\n")
        #expect(plain.line(event) == "warning: spool entry left alone hangwatch.path=\"/a b\" hangwatch.reason=\"a FIFO\"\n")
        #expect(journal.line(Self.event(.critical, "x")) == "<2>x\n")
        #expect(plain.line(Self.event(.info, "x")) == "info: x\n")
    }
}
