import Foundation
@testable import HangWatch
import HangWatchReport
import Testing

/// Async callers in reports: placed after the async function they called, marked, proven against
/// the real unwind tables of this process, and part of the signature.
@Suite struct AsyncCallerReportTests {
    /// Three functions of this test binary, each a distinct function in the unwind tables.
    static let starts: [UInt] = {
        let a: @convention(c) (Int) -> Int = { $0 &+ 1 }
        let b: @convention(c) (Int) -> Int = { $0 &* 3 }
        let c: @convention(c) (Int) -> Int = { $0 &- 7 }
        return [a, b, c].map { UInt(bitPattern: unsafeBitCast($0, to: Int.self)) }
    }()
    let images = UnsafeImageMapReader.read()
    let builder = ReportBuilder(
        service: "svc", host: "h", pid: 7, process: HangReport.Process(executable: "/srv/app", startTimeTicks: 1), signal: 41,
        maxFrames: 128, wallClock: { Date(timeIntervalSince1970: Double($0) / 1e6) })

    func report(_ physical: [UInt], callers: AsyncCallers?) -> HangReport {
        var recording = HangRecording(
            id: "id", startMicroseconds: 1_000_000, detectedMicroseconds: 1_250_000, activity: 64, mode: "m",
            thresholdMicroseconds: 250_000,
            thread: MonitoredThread(tid: 7, startTimeTicks: 1, stackLow: 0, stackHigh: 1, name: "w", isMain: false),
            process: ProcessSnapshot(rssBytes: 100, loadAverage: [1, 1, 1], tracerPID: 0, cpuCount: 2),
            baseline: nil, watchdogOversleepMicroseconds: 0, stopSuspected: false, maxSamples: 100,
            sampleIntervalMicroseconds: 50_000)
        var sample = StackSample(microseconds: 1_250_000, frames: physical, method: .signal, truncated: false, state: "R")
        sample.asyncCallers = callers
        recording.add(sample)
        recording.endMicroseconds = 1_500_000
        return builder.build(recording, images: images, outcome: .recovered)
    }

    /// The physical stack: a helper (in this binary), the async function the runtime called, the runtime.
    var physical: [UInt] { [Self.starts[0] + 4, Self.starts[1] + 9, Self.starts[2] + 5] }

    @Test func theCallersFollowTheAsyncFunctionMarkedAndExact() throws {
        for start in Self.starts { try #require(images.functionStart(of: start) == start, "not a function start: \(start)") }
        let callers = AsyncCallers(after: 1, resumeAddresses: [Self.starts[2], Self.starts[0]], end: .complete)
        let report = report(physical, callers: callers)
        let frames = try #require(report.heaviestStack?.frames)
        #expect(frames.count == 5)
        #expect(frames.map { $0.async == true } == [false, false, true, true, false])
        #expect(frames[2].address == Hex.format(Self.starts[2]) && frames[3].address == Hex.format(Self.starts[0]))
        // Looked up as they are (a function's first byte), not as return addresses.
        #expect(frames[2].offset == frames[2].functionOffset && frames[3].offset == frames[3].functionOffset)
        #expect(report.stacks.first?.asyncCallers == "complete")
    }

    @Test func twoHandlersThatHangInTheSameHelperDoNotShareASignature() {
        let first = report(physical, callers: AsyncCallers(after: 1, resumeAddresses: [Self.starts[0]], end: .complete))
        let second = report(physical, callers: AsyncCallers(after: 1, resumeAddresses: [Self.starts[2]], end: .complete))
        let none = report(physical, callers: nil)
        #expect(first.signature != second.signature)
        #expect(first.signature != none.signature && second.signature != none.signature)
    }

    @Test func anAddressThatIsNoFunctionStartEndsTheChainUnproven() throws {
        let callers = AsyncCallers(after: 1, resumeAddresses: [Self.starts[2], Self.starts[0] + 1, Self.starts[1]], end: .complete)
        let report = report(physical, callers: callers)
        let frames = try #require(report.heaviestStack?.frames)
        #expect(frames.filter { $0.async == true }.map(\.address) == [Hex.format(Self.starts[2])])
        #expect(report.stacks.first?.asyncCallers == "async resume address unproven")
    }

    @Test func aChainCutShortSaysWhy() {
        let callers = AsyncCallers(after: 1, resumeAddresses: [Self.starts[2]], end: .unreadable)
        #expect(report(physical, callers: callers).stacks.first?.asyncCallers == "async context unreadable")
        #expect(report(physical, callers: nil).stacks.first?.asyncCallers == nil)
    }

    @Test func reportsWithoutAsyncFieldsStillRead() throws {
        let old = #"{"address":"0x10","image":null,"offset":null}"#
        let frame = try JSONDecoder().decode(HangReport.Frame.self, from: Data(old.utf8))
        #expect(frame.async == nil && !frame.isAsyncCaller)
        let encoded = String(decoding: try JSONEncoder().encode(frame), as: UTF8.self)
        #expect(!encoded.contains("async"))
    }
}
