import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct ReportBuilderTests {
    static let appImage = ImageMap.Image(
        path: "/srv/app", buildID: "aa", bias: 0x1000_0000, segments: [0x1000_0000..<0x1010_0000], unwindSegments: [],
        isMainExecutable: true)
    let images = ImageMap(images: [appImage])
    let builder = ReportBuilder(
        service: "svc", host: "h", pid: 7, process: HangReport.Process(executable: "/srv/app", startTimeTicks: 1), signal: 41,
        maxFrames: 128, wallClock: { Date(timeIntervalSince1970: Double($0) / 1e6) })

    func recording(
        samples: [StackSample], end: UInt64? = 1_700_000, baseline: ProcTask.SchedStat? = .init(onCPUNanoseconds: 0, runQueueNanoseconds: 0),
        debugger: Bool = false, stopSuspected: Bool = false
    ) -> HangRecording {
        var recording = HangRecording(
            id: "id", startMicroseconds: 1_000_000, detectedMicroseconds: 1_250_000, activity: 64, mode: "m",
            thresholdMicroseconds: 250_000,
            thread: MonitoredThread(tid: 7, startTimeTicks: 1, stackLow: 0, stackHigh: 1, name: "main", isMain: true),
            process: ProcessSnapshot(rssBytes: 100, loadAverage: [1, 1, 1], tracerPID: debugger ? 99 : 0, cpuCount: 2),
            baseline: baseline, watchdogOversleepMicroseconds: 0, stopSuspected: stopSuspected, maxSamples: 100,
            sampleIntervalMicroseconds: 50_000)
        for sample in samples { recording.add(sample) }
        recording.endMicroseconds = end
        return recording
    }

    func sample(
        at time: UInt64, _ frames: [UInt], state: Character = "R", syscall: Int? = nil, onCPU: UInt64 = 0, queue: UInt64 = 0
    ) -> StackSample {
        StackSample(
            microseconds: time, frames: frames, method: .signal, truncated: false, state: state, syscall: syscall,
            onCPUNanoseconds: onCPU, runQueueNanoseconds: queue, pauseNanoseconds: 12_000)
    }

    @Test func durationRunsFromTheStartOfTheBusyPeriodToTheEnd() {
        let report = builder.build(recording(samples: [sample(at: 1_250_000, [0x1000_0010])]), images: images, outcome: .recovered)
        #expect(report.durationMs == 700)
        #expect(report.thresholdMs == 250)
        #expect(report.activity == "afterWaiting")
        #expect(report.samples[0].offsetMs == 250)
        #expect(report.frames[0].image == 0)
        #expect(report.frames[0].offset == "0x10")
    }

    @Test func theHeaviestStackIsTheOneMostTimeIsSpentIn() throws {
        let a: [UInt] = [0x1000_0010, 0x1000_0100]
        let b: [UInt] = [0x1000_0020, 0x1000_0200]
        let report = builder.build(
            recording(samples: [
                sample(at: 1_250_000, a), sample(at: 1_300_000, b), sample(at: 1_350_000, b), sample(at: 1_400_000, b),
                sample(at: 1_450_000, a),
            ]), images: images, outcome: .recovered)
        let heaviest = try #require(report.heaviestStack)
        // a: 50 ms + (1700 - 1450) = 300 ms; b: 150 ms.
        #expect(heaviest.frames.map(\.address) == ["0x10000010", "0x10000100"])
        #expect(heaviest.weightMs == 300)
        #expect(heaviest.sampleCount == 2)
        #expect(report.stacks.count == 2)
        #expect(report.frames.count == 4)
    }

    @Test func computingIsTellingFromCPUTime() {
        let report = builder.build(
            recording(samples: [sample(at: 1_250_000, [0x1000_0010]), sample(at: 1_450_000, [0x1000_0010], onCPU: 190_000_000)]),
            images: images, outcome: .recovered)
        #expect(report.context.verdict == .computing)
        #expect(report.context.onCpuRatio == 0.95)
    }

    @Test func blockedNamesTheSystemCall() {
        let report = builder.build(
            recording(samples: [
                sample(at: 1_250_000, [0x1000_0010], state: "S", syscall: 202),
                sample(at: 1_450_000, [0x1000_0010], state: "S", syscall: 202, onCPU: 1_000_000),
            ]), images: images, outcome: .recovered)
        #expect(report.context.verdict == .blocked)
        #expect(report.context.blockedIn == "futex")
        #expect(report.samples[0].syscall == "futex")
    }

    @Test func runningAsMuchAsWaitingForACPUIsStarvation() {
        let report = builder.build(
            recording(samples: [
                sample(at: 1_250_000, [0x1000_0010]),
                sample(at: 1_450_000, [0x1000_0010], onCPU: 90_000_000, queue: 90_000_000),
            ]), images: images, outcome: .recovered)
        #expect(report.context.verdict == .starved)
    }

    @Test func starvationIsNotBlamedOnTheCode() {
        let report = builder.build(
            recording(samples: [
                sample(at: 1_250_000, [0x1000_0010]),
                sample(at: 1_450_000, [0x1000_0010], onCPU: 40_000_000, queue: 150_000_000),
            ]), images: images, outcome: .recovered)
        #expect(report.context.verdict == .starved)
    }

    /// Found runnable at every look yet never on a CPU: it waited for one all along, though the
    /// kernel's run-queue time (added when a wait ends) shows none of it yet.
    @Test func aThreadFoundRunnableButNeverRunIsStarvedNotBlocked() {
        let report = builder.build(
            recording(samples: [
                sample(at: 1_250_000, []),
                sample(at: 1_450_000, []),
            ]), images: images, outcome: .recovered)
        #expect(report.context.verdict == .starved)
        // A sleeping thread with no CPU time stays blocked.
        let asleep = builder.build(
            recording(samples: [
                sample(at: 1_250_000, [0x1000_0010], state: "S", syscall: 202),
                sample(at: 1_450_000, [0x1000_0010], state: "S", syscall: 202),
            ]), images: images, outcome: .recovered)
        #expect(asleep.context.verdict == .blocked)
    }

    @Test func theLabelsInEffectAreMergedAndBounded() {
        var labelled = recording(samples: [sample(at: 1_250_000, [0x1000_0010])])
        var many: [String: String] = [:]
        for index in 0..<9 { many["k\(index)"] = "v" }
        labelled.labels = [["route": "GET /checkout", "tenant": "acme"], ["route": "GET /checkout/pay"], many]
        let report = builder.build(labelled, images: images, outcome: .recovered)
        #expect(report.labels?.count == HangLabels.maxCount)
        #expect(report.labels?["k0"] == "v")
        #expect(report.labelsOmitted == 11 - HangLabels.maxCount)
        let plain = builder.build(recording(samples: [sample(at: 1_250_000, [0x1000_0010])]), images: images, outcome: .recovered)
        #expect(plain.labels == nil && plain.labelsOmitted == nil)
        var few = recording(samples: [sample(at: 1_250_000, [0x1000_0010])])
        few.labels = [["route": "GET /checkout", "tenant": "acme"], ["route": "GET /checkout/pay"]]
        let nested = builder.build(few, images: images, outcome: .recovered)
        #expect(nested.labels == ["route": "GET /checkout/pay", "tenant": "acme"] && nested.labelsOmitted == nil)
    }

    @Test func aStoppedProcessOrADebuggerIsFlagged() {
        let stopped = builder.build(recording(samples: [sample(at: 1_250_000, [0x1000_0010])], stopSuspected: true), images: images, outcome: .recovered)
        #expect(stopped.context.verdict == .stopped)
        #expect(stopped.context.processStopped)
        let debugged = builder.build(recording(samples: [sample(at: 1_250_000, [0x1000_0010])], debugger: true), images: images, outcome: .recovered)
        #expect(debugged.context.verdict == .debugger)
        #expect(debugged.context.debuggerAttached)
    }

    @Test func captureFailuresAreCountedByKind() {
        var failed = sample(at: 1_250_000, [])
        failed.failure = .signalBlocked
        var failedAgain = failed
        failedAgain.microseconds = 1_300_000
        let report = builder.build(recording(samples: [failed, failedAgain]), images: images, outcome: .recovered)
        #expect(report.capture.errors == [HangReport.CaptureError(kind: "signal blocked", count: 2, message: StackSample.Failure.signalBlocked.message)])
        #expect(report.samples.allSatisfy { $0.stack == nil && $0.error == "signal blocked" })
        #expect(report.heaviestStack == nil)
    }

    @Test func aCaptureThatCutACallShortIsMarkedAndCountedEvenOnceDropped() throws {
        var cut = sample(at: 1_250_000, [0x1000_0010])
        cut.cutCallShort = true
        let clean = sample(at: 1_300_000, [0x1000_0010])
        let report = builder.build(recording(samples: [cut, clean]), images: images, outcome: .recovered)
        #expect(report.samples.map(\.cutCallShort) == [true, nil])
        #expect(report.capture.callsCutShort == 1)
        let json = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(json.contains("\"cutCallShort\":true") && json.contains("\"callsCutShort\":1"))
        // None cut short: neither field is written.
        let none = builder.build(recording(samples: [clean]), images: images, outcome: .recovered)
        #expect(none.capture.callsCutShort == nil)
        let noneJSON = String(decoding: try JSONEncoder().encode(none), as: UTF8.self)
        #expect(!noneJSON.contains("cutCallShort") && !noneJSON.contains("callsCutShort"))
        // A sample the cap drops is still counted.
        var long = HangRecording(
            id: "id", startMicroseconds: 0, detectedMicroseconds: 250_000, activity: 64, mode: nil, thresholdMicroseconds: 250_000,
            thread: nil, process: ProcessSnapshot(rssBytes: nil, loadAverage: nil, tracerPID: nil, cpuCount: 1), baseline: nil,
            watchdogOversleepMicroseconds: 0, stopSuspected: false, maxSamples: 2, sampleIntervalMicroseconds: 50_000)
        for offset in 0..<5 {
            var next = sample(at: 250_000 + UInt64(offset) * 50_000, [0x1000_0010])
            next.cutCallShort = offset == 1
            long.add(next)
        }
        #expect(!long.samples.contains { $0.cutCallShort })
        #expect(builder.build(long, images: images, outcome: .recovered).capture.callsCutShort == 1)
    }

    /// The end comes from the coarse clock and may read a tick early; a sample taken later in the
    /// hang stretches it, so sampled time never exceeds the duration.
    @Test func aSampleAfterTheCoarseEndStretchesTheDuration() {
        let report = builder.build(
            recording(samples: [sample(at: 1_250_000, [0x1000_0010]), sample(at: 1_702_000, [0x1000_0010])], end: 1_700_000),
            images: images, outcome: .recovered)
        #expect(report.durationMs == 702)
        #expect(report.samples.last!.offsetMs <= report.durationMs)
    }

    @Test func anOngoingHangLastsUntilItsLastSample() {
        let report = builder.build(
            recording(samples: [sample(at: 1_250_000, [0x1000_0010]), sample(at: 1_900_000, [0x1000_0010])], end: nil),
            images: images, outcome: .ongoing)
        #expect(report.endedAt == nil)
        #expect(report.durationMs == 900)
        #expect(report.outcome == .ongoing)
    }

    /// Two hot loops that read the clock: 2 in 5 samples of each land in the C library's clock
    /// function and stop there (truncated). Those once carried enough weight to shrink the signature
    /// to the process's entry frame, and every such hang got the same signature (one folded into the
    /// other). Each must keep its own signature and name its own loop.
    @Test func hotLoopsThatReadTheClockKeepTheirOwnSignatureAndCulprit() throws {
        let libc = ImageMap.Image(
            path: "/lib/x86_64-linux-gnu/libc.so.6", buildID: "cc", bias: 0x7000_0000, segments: [0x7000_0000..<0x7010_0000],
            unwindSegments: [], isMainExecutable: false)
        let map = ImageMap(images: [Self.appImage, libc])
        func hang(loop: UInt, handler: UInt) -> HangReport {
            let entry: [UInt] = [0x1000_0900, 0x7000_0500, 0x7000_0600, 0x1000_0010]
            let complete = [loop, handler] + entry
            var truncated = sample(at: 0, [0x7000_0100, loop + 0x20])
            truncated.truncated = true
            truncated.truncation = .noUnwindInformation
            var samples: [StackSample] = []
            for index in 0..<10 {
                var next = index % 5 < 2 ? truncated : sample(at: 0, complete)
                next.microseconds = 1_250_000 + UInt64(index) * 40_000
                samples.append(next)
            }
            return builder.build(recording(samples: samples), images: map, outcome: .recovered)
        }
        let first = hang(loop: 0x1000_0110, handler: 0x1000_0310)
        let second = hang(loop: 0x1000_0210, handler: 0x1000_0410)
        #expect(first.signature != second.signature)
        #expect(try #require(first.heaviestStack).frames.map(\.address).prefix(2) == ["0x10000110", "0x10000310"])
        #expect(try #require(second.heaviestStack).frames.map(\.address).prefix(2) == ["0x10000210", "0x10000410"])
        #expect(first.stacks.contains { $0.truncated && $0.truncation == "no unwind information" })
    }

    @Test func aProvisionalReportWithOneSampleHasTheSignatureOfThatSample() throws {
        let one = builder.build(
            recording(samples: [sample(at: 1_250_000, [0x1000_0010, 0x1000_0100])], end: nil), images: images, outcome: .ongoing)
        let heaviest = try #require(one.heaviestStack)
        #expect(one.signature == StackSignature.compute(frames: heaviest.frames, images: one.images))
        #expect(one.signature != StackSignature.compute(frames: [], images: one.images))
    }

    @Test func longHangsKeepABoundedNumberOfSamplesCoveringTheWholeHang() {
        var recording = HangRecording(
            id: "id", startMicroseconds: 0, detectedMicroseconds: 250_000, activity: 64, mode: nil,
            thresholdMicroseconds: 250_000, thread: nil, process: ProcessSnapshot(rssBytes: nil, loadAverage: nil, tracerPID: nil, cpuCount: 1),
            baseline: nil, watchdogOversleepMicroseconds: 0, stopSuspected: false, maxSamples: 10,
            sampleIntervalMicroseconds: 50_000)
        var time: UInt64 = 250_000
        for _ in 0..<1000 {
            recording.add(sample(at: time, [0x1000_0010]))
            time += recording.sampleIntervalMicroseconds
        }
        #expect(recording.samples.count <= 10)
        #expect(recording.samples.first?.microseconds == 250_000)
        #expect(recording.samples.count + recording.samplesDropped == 1000)
        // The interval doubles up to a ceiling, so sampling continues at a bounded rate.
        #expect(recording.sampleIntervalMicroseconds == HangRecording.longestSampleIntervalMicroseconds)
        // Still spread over the whole hang.
        #expect(recording.samples.last!.microseconds > time / 2)
    }
}

@Suite struct HeaviestPathTests {
    // Frames are named by letters; identity is the letter before the dot (the function).
    let names = ["root", "main.1", "spin.1", "spin.2", "spin.3", "helper.1", "other.1"]
    func identity(_ index: Int) -> String { String(names[index].split(separator: ".")[0]) }

    @Test func aHotFunctionIsNotSplitBetweenTheHelpersItCalls() throws {
        // spin: 3 samples at different instructions; spin -> helper: 2 samples.
        let samples = [
            HeaviestPath.Sample(frames: [2, 1, 0], weight: 10, stack: 0),
            HeaviestPath.Sample(frames: [3, 1, 0], weight: 10, stack: 1),
            HeaviestPath.Sample(frames: [5, 2, 1, 0], weight: 10, stack: 2),
            HeaviestPath.Sample(frames: [5, 2, 1, 0], weight: 10, stack: 2),
            HeaviestPath.Sample(frames: [4, 1, 0], weight: 10, stack: 3),
        ]
        let result = try #require(HeaviestPath.find(samples, identity: identity))
        #expect(result.sampleCount == 5)
        #expect(result.weight == 50)
        #expect([0, 1, 3].contains(result.stack))
    }

    @Test func theHeavierBranchWins() throws {
        let samples = [
            HeaviestPath.Sample(frames: [6, 1, 0], weight: 30, stack: 0),
            HeaviestPath.Sample(frames: [2, 1, 0], weight: 10, stack: 1),
            HeaviestPath.Sample(frames: [2, 1, 0], weight: 10, stack: 1),
        ]
        let result = try #require(HeaviestPath.find(samples, identity: identity))
        #expect(result.stack == 0)
        #expect(result.weight == 30)
    }

    @Test func descendsIntoAHelperThatTakesMostOfTheTime() throws {
        let samples = [
            HeaviestPath.Sample(frames: [5, 2, 1, 0], weight: 40, stack: 0),
            HeaviestPath.Sample(frames: [2, 1, 0], weight: 10, stack: 1),
        ]
        #expect(try #require(HeaviestPath.find(samples, identity: identity)).stack == 0)
    }

    @Test func aTruncatedSampleCountsAsTheCompleteStackWhoseLeafItIs() throws {
        // A capture in the vDSO that could not get past it: [helper, spin], truncated; the complete
        // stacks through it are [helper, spin, main, root]. It must not win on its own.
        let samples = [
            HeaviestPath.Sample(frames: [5, 2], weight: 60, stack: 0, complete: false),
            HeaviestPath.Sample(frames: [5, 2, 1, 0], weight: 30, stack: 1),
            HeaviestPath.Sample(frames: [6, 1, 0], weight: 35, stack: 2),
        ]
        let result = try #require(HeaviestPath.find(samples, identity: identity))
        #expect(result.stack == 1)
        #expect(result.weight == 90)
    }

    @Test func truncatedSamplesThatMatchNothingAreLeftOutUnlessTheyOutweighTheRest() throws {
        let some = [
            HeaviestPath.Sample(frames: [4], weight: 20, stack: 0, complete: false),
            HeaviestPath.Sample(frames: [6, 1, 0], weight: 30, stack: 1),
        ]
        #expect(try #require(HeaviestPath.find(some, identity: identity)).stack == 1)
        let most = [
            HeaviestPath.Sample(frames: [4], weight: 80, stack: 0, complete: false),
            HeaviestPath.Sample(frames: [6, 1, 0], weight: 30, stack: 1),
        ]
        #expect(try #require(HeaviestPath.find(most, identity: identity)).stack == 0)
    }

    @Test func aSingleSampleThatHasNotLastedYetStillHasAPath() throws {
        // A provisional report at detection: one sample, no time after it yet.
        let samples = [HeaviestPath.Sample(frames: [2, 1, 0], weight: 0, stack: 0)]
        #expect(try #require(HeaviestPath.find(samples, identity: identity)).stack == 0)
    }

    @Test func noSamplesNoPath() {
        #expect(HeaviestPath.find([], identity: identity) == nil)
    }
}
