import Foundation
import Testing

@testable import HangWatchAgent

@Suite struct ProcessStatusTests {
    /// A `/proc/<pid>/stat` line with `name` as the command and `state` and `start` in fields 3 and 22.
    static func line(name: String, state: String = "S", start: UInt64 = 123_456) -> String {
        // Fields 4 ... 21, then 22 (the start time), then the rest.
        let middle = (4...21).map { String($0 * 10) }.joined(separator: " ")
        return "4242 (\(name)) \(state) \(middle) \(start) 2000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
    }

    @Test func theStateAndStartTimeAreReadAfterTheLastParenthesis() {
        #expect(ProcessStatus.parse(stat: Self.line(name: "billing")) == ProcessStatus(state: "S", startTimeTicks: 123_456))
        // A name may hold spaces and parentheses, even what looks like the fields that follow.
        for name in ["a b", "x) R 1 2 (y", "((", "))", ") T 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 777", ""] {
            #expect(ProcessStatus.parse(stat: Self.line(name: name, state: "T", start: 99)) == ProcessStatus(state: "T", startTimeTicks: 99), "\(name)")
        }
        #expect(ProcessStatus.parse(stat: Self.line(name: "z", state: "Z"))?.isZombie == true)
        #expect(ProcessStatus.parse(stat: Self.line(name: "t", state: "t"))?.isStopped == true)
        #expect(ProcessStatus.parse(stat: Self.line(name: "r", state: "R"))?.isStopped == false)
    }

    @Test func linesThatAreNotStatLinesAreNothing() {
        let good = Self.line(name: "ok")
        for bad in ["", "4242 ok S 1 2 3", "4242 (ok) S 1 2 3", good.replacingOccurrences(of: ") S ", with: ") SS "),
            good.replacingOccurrences(of: " 123456 ", with: " -5 "), good.replacingOccurrences(of: ") S ", with: ") 7 "),
            String(good.prefix { $0 != ")" })]
        {
            #expect(ProcessStatus.parse(stat: bad) == nil, "\(bad)")
        }
    }

    @Test func aLiveProcessIsReadFromProcAndAMissingOneIsNil() throws {
        let own = try #require(ProcessStatus.read(pid: getpid()))
        #expect(own.state.isLetter && !own.isStopped && !own.isZombie)
        #expect(own.startTimeTicks > 0)
        // The same start time as the kernel's own line for this process says.
        let text = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        let fields = text[text.index(after: try #require(text.lastIndex(of: ")")))...].split(separator: " ")
        #expect(own.startTimeTicks == UInt64(fields[19]))
        #expect(ProcessStatus.read(pid: 0) == nil)
        #expect(ProcessStatus.read(pid: -1) == nil)
        #expect(ProcessStatus.read(pid: Int32.max) == nil)
        #expect(ProcFileSystem().status(of: getpid())?.startTimeTicks == own.startTimeTicks)
    }
}
