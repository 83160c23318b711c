import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

/// A starved pool's report: every pool thread with its stack and verdict, the heaviest stack from
/// the held threads, the probe's exact wait as the duration.
@Suite struct ReportBuilderPoolTests {
    static let app = ImageMap.Image(
        path: "/srv/app", buildID: "aa", bias: 0x1000_0000, segments: [0x1000_0000..<0x1010_0000], unwindSegments: [],
        isMainExecutable: true)
    static let dispatch = ImageMap.Image(
        path: "/usr/lib/swift/linux/libdispatch.so", buildID: "bb", bias: 0x2000_0000, segments: [0x2000_0000..<0x2010_0000],
        unwindSegments: [], isMainExecutable: false)
    static let libc = ImageMap.Image(
        path: "/usr/lib/x86_64-linux-gnu/libc.so.6", buildID: "cc", bias: 0x3000_0000, segments: [0x3000_0000..<0x3010_0000],
        unwindSegments: [], isMainExecutable: false)
    let images = ImageMap(images: [app, dispatch, libc])
    let builder = ReportBuilder(
        service: "svc", host: "h", pid: 7, process: HangReport.Process(executable: "/srv/app", startTimeTicks: 1), signal: 41,
        maxFrames: 128, wallClock: { Date(timeIntervalSince1970: Double($0) / 1e6) })

    func thread(_ tid: Int32, at time: UInt64, _ frames: [UInt], state: Character, syscall: Int? = nil, attached: Bool = false)
        -> PoolThreadSample
    {
        PoolThreadSample(
            tid: tid, name: "oot.default-qos",
            sample: StackSample(
                microseconds: time, frames: frames, method: state == "R" ? .signal : .syscall, truncated: false, state: state,
                syscall: syscall),
            attached: attached)
    }

    func recording(_ threads: [PoolThreadSample], end: UInt64? = 1_900_000) -> PoolRecording {
        var recording = PoolRecording(
            id: "pool-1", startMicroseconds: 1_000_000, detectedMicroseconds: 1_250_000, thresholdMicroseconds: 250_000,
            sampleIntervalMicroseconds: 50_000, process: ProcessSnapshot(rssBytes: 1, loadAverage: nil, tracerPID: 0, cpuCount: 2))
        recording.threads = threads
        recording.endMicroseconds = end
        return recording
    }

    /// A late probe while every pool thread waits for work starves nothing (the machine's delay):
    /// the pool watch writes no report for it. One held thread, or one on a CPU, and it does.
    @Test func aProbeLateWithEveryPoolThreadIdleIsNoStarvation() {
        let idle = [0x3000_0020, 0x2000_0200, 0x2000_0100, 0x3000_0200] as [UInt]
        #expect(PoolWatch.everyThreadIdle([thread(11, at: 1, idle, state: "S"), thread(12, at: 2, idle, state: "S")], images: images))
        #expect(!PoolWatch.everyThreadIdle([thread(11, at: 1, idle, state: "S"), thread(12, at: 2, [0x3000_0010, 0x1000_0100, 0x2000_0100], state: "S")], images: images))
        #expect(!PoolWatch.everyThreadIdle([thread(11, at: 1, idle, state: "R")], images: images))
        // A stack that stops early, or an address no image holds, proves nothing.
        var truncated = thread(11, at: 1, idle, state: "S")
        truncated.sample.truncated = true
        #expect(!PoolWatch.everyThreadIdle([truncated], images: images))
        #expect(!PoolWatch.everyThreadIdle([thread(11, at: 1, [0x3000_0020, 0x9000_0000], state: "S")], images: images))
        #expect(!PoolWatch.everyThreadIdle([], images: images))
    }

    @Test func everyPoolThreadIsInTheReportWithItsStackAndVerdict() throws {
        let report = builder.build(
            pool: recording([
                thread(11, at: 1_250_100, [0x3000_0010, 0x1000_0100, 0x2000_0100, 0x3000_0200], state: "S", syscall: 230),
                thread(12, at: 1_250_200, [0x1000_0300, 0x1000_0100, 0x2000_0100, 0x3000_0200], state: "R", attached: true),
                thread(13, at: 1_250_300, [0x3000_0020, 0x2000_0200, 0x2000_0100, 0x3000_0200], state: "S", syscall: 202),
                thread(14, at: 1_600_000, [], state: "R"),
            ]), images: images, outcome: .recovered)

        #expect(report.source == "concurrency-pool")
        #expect(report.durationMs == 900)
        let threads = try #require(report.threads)
        #expect(threads.map(\.tid) == [11, 12, 13, 14])
        #expect(threads.map(\.verdict) == ["blocked", "computing", "idle", "computing"])
        #expect(threads[0].syscall == "clock_nanosleep" && threads[2].syscall == "futex")
        #expect(threads[3].stack == nil)
        // The heaviest stack is a held thread's, never the idle worker's.
        let heaviest = try #require(report.heaviestStack)
        #expect(heaviest.stack != threads[2].stack)
        #expect(heaviest.frames.contains { $0.address == "0x10000100" })
        #expect(report.thread.tid == 11)
        #expect(ReportValidator().problems(report).isEmpty)
        // It reads back, and a report without `threads` still decodes.
        let decoded = try HangReport.decode(report.encoded())
        #expect(decoded.threads == report.threads)
        var old = report
        old.threads = nil
        old.schema = "hangwatch.hang/1.1"
        #expect(try HangReport.decode(old.encoded()).threads == nil)
    }

    @Test func aThreadStartedFromAJobIsNotAPoolThread() throws {
        // Named like the pool (it inherited the name) but its complete stack has no libdispatch frame.
        let report = builder.build(
            pool: recording([
                thread(11, at: 1_250_100, [0x3000_0010, 0x1000_0100, 0x2000_0100, 0x3000_0200], state: "S", syscall: 230),
                thread(21, at: 1_250_200, [0x3000_0010, 0x1000_0500, 0x3000_0200], state: "S", syscall: 230),
            ]), images: images, outcome: .recovered)
        #expect(report.threads?.map(\.tid) == [11])
    }

    @Test func anOngoingStarvationLastsUntilTheLastLook() {
        let report = builder.build(
            pool: recording([thread(11, at: 1_400_000, [0x1000_0100, 0x2000_0100], state: "S", syscall: 230)], end: nil),
            images: images, outcome: .ongoing)
        #expect(report.durationMs == 400)
        #expect(report.endedAt == nil)
    }

    @Test func theValidatorChecksThreadStackIndices() {
        var report = builder.build(
            pool: recording([thread(11, at: 1_250_100, [0x1000_0100, 0x2000_0100], state: "S", syscall: 230)]), images: images,
            outcome: .recovered)
        report.threads?[0].stack = 9
        #expect(ReportValidator().problems(report).contains { $0.hasPrefix("threads[0].stack") })
    }
}
