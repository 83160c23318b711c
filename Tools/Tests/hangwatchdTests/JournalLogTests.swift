import Foundation
import Testing
import ToolsTestSupport

/// Log lines carry syslog priority prefixes (`<4>…`) only when standard error is the journal, as
/// `$JOURNAL_STREAM` says (the device and inode of the stream systemd connected); on a terminal, a
/// file or a pipe they are plain lines.
@Suite struct JournalLogTests {
    /// The agent's log when it refuses a missing spool (it exits at once), with `JOURNAL_STREAM`
    /// set to `journalStream` (nil: unset; "log": the log file's own device and inode).
    static func logOfARefusedStart(journalStream: String?) throws -> String {
        let root = try SpoolRoot()
        var environment: [String: String?] = ["JOURNAL_STREAM": journalStream]
        if journalStream == "log" { environment = [:] }
        let agent = try AgentProcess(root: root.path + "/missing", environment: environment)
        #expect(agent.waitForExit() == 3)
        return agent.log
    }

    static func prefixed(_ line: Substring) -> Bool {
        line.count > 3 && line.hasPrefix("<") && line.dropFirst().first?.isNumber == true && line.dropFirst(2).hasPrefix(">")
    }

    @Test(arguments: [nil, "1:2", "garbage", "0:0"] as [String?])
    func offTheJournalLinesArePlain(journalStream: String?) throws {
        let log = try Self.logOfARefusedStart(journalStream: journalStream)
        let lines = log.split(separator: "\n")
        #expect(!lines.isEmpty)
        #expect(!lines.contains(where: Self.prefixed), "\(journalStream ?? "unset"): \(log)")
        #expect(lines.contains { $0.contains("no such directory") }, "\(log)")
    }

    @Test func onTheJournalLinesCarryTheirPriority() throws {
        let log = try Self.logOfARefusedStart(journalStream: "log")
        let lines = log.split(separator: "\n")
        #expect(!lines.isEmpty && lines.allSatisfy(Self.prefixed), "\(log)")
        #expect(lines.contains { $0.hasPrefix("<2>") && $0.contains("no such directory") }, "\(log)")
    }
}
