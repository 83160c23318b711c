import HangWatchProfiles
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The folded format as flamegraph.pl and inferno read it: per line, frames joined by `;`, one
/// space, then a whole-number count (the last space of the line separates them).
@Suite struct FoldedStacksTests {
    static func parse(_ text: String) throws -> [(frames: [String], count: Int)] {
        #expect(text.hasSuffix("\n"))
        return try text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { line in
            let space = try #require(line.lastIndex(of: " "), "no count: \(line)")
            let count = try #require(Int(line[line.index(after: space)...]), "count is not an integer: \(line)")
            let frames = line[..<space].split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            #expect(frames.allSatisfy { !$0.isEmpty }, "empty frame in \(line)")
            #expect(count > 0)
            return (frames, count)
        }
    }

    @Test func oneLinePerStackWeightedBySampledMilliseconds() throws {
        let lines = try Self.parse(FoldedStacks.render([StackReports.twoStacks]))
        #expect(lines.count == 2)
        #expect(lines[0].frames == ["main", "billing.load()", "Parser.parse()"])
        #expect(lines[0].count == 150)
        #expect(lines[1].frames == ["main", "billing.render(_:)"])
        #expect(lines[1].count == 50)
    }

    @Test func aStackThatStoppedStartsWithAMarkerNotWithItsLastProvenFrame() throws {
        var report = StackReports.twoStacks
        report.stacks[1].truncated = true
        report.stacks[1].truncation = "frame pointer unproven"
        let lines = try Self.parse(FoldedStacks.render([report]))
        #expect(lines[1].frames == ["[stack stops: frame pointer unproven]", "main", "billing.render(_:)"])
        #expect(lines[0].frames.first == "main")
    }

    /// A hang that waited on a socket: the samples in that call end in a leaf that names the other
    /// end (its address and the process holding it), so a flame graph keeps the peer.
    @Test func aSampleWaitingOnASocketEndsInALeafNamingTheOtherEnd() throws {
        var report = StackReports.twoStacks
        report.samples = report.samples.map { sample in
            var blocked = sample
            blocked.state = "S"
            blocked.syscall = "read"
            return blocked
        }
        var endpoint = HangReport.Endpoint(descriptor: 9, type: "tcp")
        endpoint.remote = "127.0.0.1:5432"
        endpoint.peers = [HangReport.Holder(pid: 4121, name: "postgres", state: "S", syscall: "epoll_wait", verdict: "blocked")]
        report.waitsFor = HangReport.WaitsFor(kind: "socket", syscall: "read", owner: "held", holder: endpoint.peers?.first, endpoints: [endpoint])
        let lines = try Self.parse(FoldedStacks.render([report]))
        #expect(lines.allSatisfy { $0.frames.last == "[waits for 127.0.0.1:5432 (process 4121 \"postgres\")]" }, "\(lines)")
        #expect(lines[0].frames.dropLast() == ["main", "billing.load()", "Parser.parse()"])
        #expect(SampledStacks.peer(of: StackReports.twoStacks) == nil, "no wait, no peer")
    }

    @Test func identicalStacksOfSeveralReportsAddUp() throws {
        let lines = try Self.parse(FoldedStacks.render([StackReports.twoStacks, StackReports.twoStacks]))
        #expect(lines.map(\.count) == [300, 100])
    }

    @Test func separatorsAndLineBreaksInNamesCannotBreakTheFormat() throws {
        let report = StackReports.report(durationMs: 100, samples: [(0, ["a;b\nc d", "main"])])
        let lines = try Self.parse(FoldedStacks.render([report]))
        #expect(lines.count == 1)
        #expect(lines[0].frames == ["main", "a:b c d"])
    }

    @Test func aReportWithoutStacksGivesNothing() {
        let report = StackReports.report(durationMs: 300, samples: [(250, [])])
        #expect(FoldedStacks.render([report]).isEmpty)
    }

    /// A report file's numbers may be anything JSON allows: a weight too large for an Int is
    /// written as Int.max, not trapped on.
    @Test func aWeightTooLargeForAnIntIsWrittenAsTheLargest() throws {
        let report = StackReports.report(durationMs: 1e300, samples: [(0, ["main", "f"])])
        let lines = try Self.parse(FoldedStacks.render([report]))
        #expect(lines.map(\.count) == [Int.max])
    }
}
