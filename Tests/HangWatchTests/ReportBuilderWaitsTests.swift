import Foundation
@testable import HangWatch
import HangWatchReport
import Testing

/// A blocked hang's `waitsFor` as the builder writes it from the looks recorded over the hang: the
/// last look's holder, and every holder in turn when the holder changed during the hang.
@Suite struct ReportBuilderWaitsTests {
    let builder = ReportBuilder(
        service: "svc", host: "h", pid: 7, process: HangReport.Process(executable: "/srv/app", startTimeTicks: 1), signal: 41,
        maxFrames: 128, wallClock: { Date(timeIntervalSince1970: Double($0) / 1e6) })
    static let mutex = WaitObject.mutex(address: 0x7f00_0040)

    /// A hang that started at 1 s (monotonic) and ended at 1.7 s, blocked on a mutex, with one
    /// look at its wait per `(holder tid, its name, time)`.
    func report(looks: [(tid: Int32, name: String, microseconds: UInt64)]) -> HangReport {
        var recording = HangRecording(
            id: "id", startMicroseconds: 1_000_000, detectedMicroseconds: 1_250_000, activity: 64, mode: "m",
            thresholdMicroseconds: 250_000,
            thread: MonitoredThread(tid: 7, startTimeTicks: 1, stackLow: 0, stackHigh: 1, name: "main", isMain: true),
            process: ProcessSnapshot(rssBytes: 100, loadAverage: [1, 1, 1], tracerPID: 0, cpuCount: 2),
            baseline: .init(onCPUNanoseconds: 0, runQueueNanoseconds: 0), watchdogOversleepMicroseconds: 0, stopSuspected: false,
            maxSamples: 100, sampleIntervalMicroseconds: 50_000)
        for look in looks {
            recording.add(
                StackSample(
                    microseconds: look.microseconds, frames: [0x1000_0010], method: .syscall, truncated: false, state: "S",
                    syscall: Syscalls.futex))
            recording.add(
                wait: WaitObservation(
                    microseconds: look.microseconds, object: Self.mutex, syscall: Syscalls.futex, file: nil, owner: .thread(look.tid),
                    holder: HolderLook(owner: .thread(look.tid), name: look.name, state: "R")))
        }
        recording.endMicroseconds = 1_700_000
        return builder.build(recording, images: ImageMap(images: []), outcome: .recovered)
    }

    /// Thread 21 holds the mutex at two looks, then thread 22 at a later one: the report names both
    /// in turn, each with the first and last look that saw it hold it, in ms since the hang began.
    @Test func aHolderThatChangedDuringTheHangIsListedWithEveryHolderInTurn() throws {
        let report = report(looks: [
            (21, "worker-a", 1_300_000), (21, "worker-a", 1_350_000), (22, "worker-b", 1_400_000),
        ])
        let waits = try #require(report.waitsFor)
        // The last look's holder is the one the report says it waited behind.
        #expect(waits.holder?.tid == 22)
        #expect(waits.holder?.name == "worker-b")
        let holders = try #require(waits.holders, "the holder changed: every holder in turn")
        #expect(
            holders == [
                HangReport.HolderSpan(tid: 21, pid: nil, name: "worker-a", firstSeenMs: 300, lastSeenMs: 350),
                HangReport.HolderSpan(tid: 22, pid: nil, name: "worker-b", firstSeenMs: 400, lastSeenMs: 400),
            ])
    }

    /// One holder at every look: the report says it once, as `holder`, with no list of holders.
    @Test func aHolderThatNeverChangedHasNoListOfHolders() throws {
        let report = report(looks: [(21, "worker-a", 1_300_000), (21, "worker-a", 1_350_000), (21, "worker-a", 1_400_000)])
        let waits = try #require(report.waitsFor)
        #expect(waits.holder?.tid == 21)
        #expect(waits.holders == nil)
    }
}
