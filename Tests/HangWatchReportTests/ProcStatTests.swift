import Foundation
@_spi(Internal) import HangWatchReport
import Testing

/// The one reader of `/proc/<pid>/stat` and `status` (the monitor's threads, the agent's monitored
/// processes, the CLI's heartbeat checks).
@Suite struct ProcStatTests {
    /// A `stat` line with `name` as the command and `state` and `start` in fields 3 and 22.
    static func line(name: String, state: String = "S", start: UInt64 = 123_456) -> String {
        // Fields 4 ... 21, then 22 (the start time), then the rest.
        let middle = (4...21).map { String($0 * 10) }.joined(separator: " ")
        return "4242 (\(name)) \(state) \(middle) \(start) 2000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
    }

    @Test func parsesStatEvenWithParenthesesInTheName() throws {
        let text = "4242 (my (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 17 3 0 0 20 0 3 0 987654 1000 100 18446744073709551615\n"
        let stat = try #require(ProcStat.parse(text))
        #expect(stat.state == "S")
        #expect(stat.userTicks == 17)
        #expect(stat.systemTicks == 3)
        #expect(stat.startTimeTicks == 987654)
    }

    @Test func theStateAndStartTimeAreReadAfterTheLastParenthesis() {
        #expect(ProcStat.parse(Self.line(name: "billing")).map { ($0.state, $0.startTimeTicks) } ?? (" ", 0) == ("S", 123_456))
        // A name may hold spaces and parentheses, even what looks like the fields that follow.
        for name in ["a b", "x) R 1 2 (y", "((", "))", ") T 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 777", ""] {
            let stat = ProcStat.parse(Self.line(name: name, state: "T", start: 99))
            #expect(stat?.state == "T" && stat?.startTimeTicks == 99, "\(name)")
        }
        #expect(ProcStat.parse(Self.line(name: "z", state: "Z"))?.isZombie == true)
        #expect(ProcStat.parse(Self.line(name: "t", state: "t"))?.isStopped == true)
        #expect(ProcStat.parse(Self.line(name: "r", state: "R"))?.isStopped == false)
    }

    /// Fields 10 and 12: the faults a thread took without and with a read from disk.
    @Test func pageFaultsAreFieldsTenAndTwelve() throws {
        let stat = try #require(ProcStat.parse(Self.line(name: "pager (x)")))
        #expect(stat.minorFaults == 100 && stat.majorFaults == 120)
        let own = try #require(ProcStat.read(path: "/proc/thread-self/stat"))
        #expect(own.minorFaults > 0, "a running thread has touched pages")
    }

    @Test func linesThatAreNotStatLinesAreNothing() {
        let good = Self.line(name: "ok")
        for bad in ["", "4242 ok S 1 2 3", "4242 (ok) S 1 2 3", good.replacingOccurrences(of: ") S ", with: ") SS "),
            good.replacingOccurrences(of: " 123456 ", with: " -5 "), good.replacingOccurrences(of: ") S ", with: ") 7 "),
            String(good.prefix { $0 != ")" })]
        {
            #expect(ProcStat.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func aLiveProcessIsReadFromProcAndAMissingOneIsNil() throws {
        let own = try #require(ProcStat.read(pid: getpid()))
        #expect(own.state.isLetter && !own.isStopped && !own.isZombie)
        #expect(own.startTimeTicks > 0)
        // The same start time as the kernel's own line for this process says.
        let text = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        let fields = text[text.index(after: try #require(text.lastIndex(of: ")")))...].split(separator: " ")
        #expect(own.startTimeTicks == UInt64(fields[19]))
        #expect(ProcStat.read(pid: 0) == nil)
        #expect(ProcStat.read(pid: -1) == nil)
        #expect(ProcStat.read(pid: Int32.max) == nil)
        #expect(ProcStat.read(path: "/proc/self/stat")?.startTimeTicks == own.startTimeTicks)
    }

    @Test func statusFieldsAreReadByName() throws {
        let status = ProcStatus(text: "Name:\tw\nUid:\t1000\t1001\t1002\t1003\nTracerPid:\t77\nSigBlk:\t0000000000000201\n")
        #expect(status.realUID == 1000)
        #expect(status.tracerPID == 77)
        #expect(status.blockedSignals == 0x201)
        #expect(status.field("Missing") == nil)
        let own = try #require(ProcStatus.read(pid: getpid()))
        #expect(own.realUID == getuid())
        #expect(ProcStatus.read(pid: Int32.max) == nil)
    }
}
