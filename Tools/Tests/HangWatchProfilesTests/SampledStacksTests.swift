import HangWatchProfiles
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct SampledStacksTests {
    @Test func eachSampleWeighsUntilTheNextAndTheLastUntilTheEnd() {
        let stacks = SampledStacks.of(StackReports.twoStacks)
        // The stackless sample at 450 ms is left out, but it still ends the sample before it.
        #expect(stacks.map(\.weightMs) == [50, 100, 50])
        // Root first; the module is dropped before a type name.
        #expect(stacks[0].frames == ["main", "billing.load()", "Parser.parse()"])
        #expect(stacks[2].frames == ["main", "billing.render(_:)"])
        #expect(stacks[0].file.allSatisfy { $0 == "/src/billing.swift" })
    }

    @Test func outOfRangeIndicesAreSkippedNotTrusted() {
        var report = StackReports.twoStacks
        report.samples[0].stack = 99
        report.stacks[1].frames.append(1000)
        let stacks = SampledStacks.of(report)
        #expect(stacks.count == 2)
        #expect(stacks[1].frames == ["main", "billing.render(_:)"])
    }
}
