import Foundation
@testable import HangWatch
@_spi(Internal) import HangWatchReport
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

    /// The recording of a hang of 800 ms (1.0 s to 1.8 s) whose thread, runnable all along, ran
    /// `onCPU` ms of it, with its context read at the start (1.0 s), with each sample and at the end.
    func limited(
        onCPU: UInt64, throttled: UInt64, periods: UInt64 = 8, limit: Double? = 0.2, end: UInt64 = 1_800_000,
        change: (inout HangContextCounters) -> Void = { _ in }
    ) -> HangRecording {
        var recording = recording(
            samples: stride(from: UInt64(1_250_000), to: end, by: 50_000).map { time in
                let done = time - 1_000_000
                return sample(at: time, [0x1000_0010], onCPU: onCPU * done * 1000 / 800, queue: (800 - onCPU) * done * 1000 / 800)
            }, end: end, baseline: .init(onCPUNanoseconds: onCPU * 250_000 / 800 * 1000, runQueueNanoseconds: (800 - onCPU) * 250_000 / 800 * 1000))
        recording.context.facts = HangContextFacts(
            cpuLimit: limit.map { HangReport.CPULimit(cores: $0, source: "cgroup v1 cpu.cfs_quota_us", path: "/sys/fs/cgroup/cpu/app") },
            hostCPUs: 8, allowedCPUs: 8, continueStampInstalled: true)
        recording.context.start = HangContextCounters(
            microseconds: 1_000_000, schedule: .init(onCPUNanoseconds: 0, runQueueNanoseconds: 0), majorFaults: 10,
            throttling: .init(periods: 100, throttledPeriods: 40, throttledNanoseconds: 5_000_000_000), continues: 0)
        var last = HangContextCounters(
            microseconds: end + 30_000, schedule: .init(onCPUNanoseconds: onCPU * 1_000_000, runQueueNanoseconds: (800 - onCPU) * 1_000_000),
            majorFaults: 10, throttling: .init(periods: 108, throttledPeriods: 40 + periods, throttledNanoseconds: 5_000_000_000 + throttled * 1_000_000),
            continues: 0)
        change(&last)
        recording.context.end = last
        return recording
    }

    /// Under a 0.2-CPU quota the thread ran 170 ms of 800 and its cgroup was throttled 615 ms: the
    /// limit, not the machine. The same thread beside three busy processes, with no throttling, is
    /// starved: the kernel's counters of the thread look the same in both.
    @Test func aThreadTheCPULimitHeldBackIsThrottledAndOneOtherProcessesHeldBackIsStarved() throws {
        let report = builder.build(limited(onCPU: 170, throttled: 615), images: images, outcome: .recovered)
        #expect(report.context.verdict == .throttled)
        #expect(report.context.throttledMs == 615 && report.context.cgroupThrottledMs == 615 && report.context.throttledPeriods == 8)
        #expect(report.context.cpuLimit == HangReport.CPULimit(cores: 0.2, source: "cgroup v1 cpu.cfs_quota_us", path: "/sys/fs/cgroup/cpu/app"))
        // The CPUs it may use: the limit, rounded up; the host's apart.
        #expect(report.context.cpuCount == 1 && report.context.hostCpuCount == 8)
        #expect(HangReportSummary.verdictLine(report) == "throttled: its cgroup's CPU limit (0.2 CPU, cgroup v1 /sys/fs/cgroup/cpu/app) held it back 615 ms of the 800 ms")
        let hogs = builder.build(limited(onCPU: 90, throttled: 0, periods: 0, limit: nil), images: images, outcome: .recovered)
        #expect(hogs.context.verdict == .starved)
        // (The counter could be read: its 0 is written, the evidence that no limit held it.)
        #expect(hogs.context.throttledMs == 0 && hogs.context.cpuLimit == nil && hogs.context.cpuCount == 8)
        // A limit, but the thread was held back by others: throttled 0 ms, said so.
        let limitedButStarved = builder.build(limited(onCPU: 90, throttled: 0, periods: 0), images: images, outcome: .recovered)
        #expect(limitedButStarved.context.verdict == .starved && limitedButStarved.context.throttledMs == 0)
        // Two threads of the cgroup throttled: the counter sums CPUs; the report caps it at the
        // thread's off-CPU time (800 - 170 ms).
        let summed = builder.build(limited(onCPU: 170, throttled: 1400), images: images, outcome: .recovered)
        #expect(summed.context.throttledMs == 630 && summed.context.cgroupThrottledMs == 1400)
    }

    /// A hang of 2 s frozen 1.2 s by a v2 freezer (kernel 6.18's frozen_usec grew by exactly that):
    /// stopped, by the freezer, its busy time the rest.
    @Test func aFreezeMidHangIsStoppedByTheFreezerWithItsBusyTimeApart() throws {
        var recording = limited(onCPU: 700, throttled: 0, limit: nil, end: 3_000_000) {
            $0.frozenMicroseconds = 7_000_000 + 1_204_000
        }
        recording.context.start?.frozenMicroseconds = 7_000_000
        recording.context.facts?.v2Cgroup = "/sys/fs/cgroup/unified/app"
        recording.stopSuspected = true
        let report = builder.build(recording, images: images, outcome: .recovered)
        #expect(report.context.verdict == .stopped && report.context.processStopped)
        #expect(report.context.stoppedBy == "cgroup freezer" && report.context.stoppedMs == 1204 && report.context.busyMs == 796)
        #expect(report.context.stopEvidence?.hasPrefix("proof: cgroup.stat.local frozen_usec grew by 1204 ms (cgroup v2 /sys/fs/cgroup/unified/app)") == true)
        #expect(HangReportSummary.verdictLine(report) == "process stopped by the cgroup freezer for 1204 ms, busy 796 ms")
        // SIGSTOP: a SIGCONT arrived; the stop's length from the thread's runnable time (the
        // watchdog, 1.1 s late, saw at least that much of it).
        var signalled = limited(onCPU: 300, throttled: 0, limit: nil, end: 3_000_000) {
            $0.continues = 1
            $0.lastContinueMicroseconds = 2_500_000
            $0.schedule = .init(onCPUNanoseconds: 300_000_000, runQueueNanoseconds: 500_000_000)
        }
        signalled.stopSuspected = true
        signalled.context.noteStop(lateMicroseconds: 1_100_000, tracerPID: nil)
        let stopped = builder.build(signalled, images: images, outcome: .recovered)
        #expect(stopped.context.stoppedBy == "SIGSTOP" && stopped.context.stoppedMs == 1200 && stopped.context.busyMs == 800)
        #expect(stopped.context.stopEvidence?.contains("SIGCONT arrived during the hang at +1500 ms") == true)
        // No stop: none of it.
        let plain = builder.build(limited(onCPU: 790, throttled: 0, limit: nil), images: images, outcome: .recovered)
        #expect(plain.context.verdict == .computing && plain.context.stoppedMs == nil && plain.context.busyMs == nil && !plain.context.processStopped)
    }

    /// 16 384 major faults, and the thread's own v2 cgroup stalled on memory 600 ms of its 600 ms
    /// off its CPU: paging. The same faults with only the system's pressure to go by: the fields,
    /// not the verdict (the thread waited for a CPU as long as it ran: starved).
    @Test func aThreadThatFaultedPagesInIsPagingOnlyOnItsOwnCgroupsEvidence() throws {
        func hang(own: Bool) -> HangReport {
            var recording = limited(onCPU: 200, throttled: 0, limit: nil) {
                $0.majorFaults = 10 + 16_384
                $0.memoryStallMicroseconds = 1_000_000 + 600_000
            }
            recording.context.start?.memoryStallMicroseconds = 1_000_000
            recording.context.facts?.memoryPressureIsOwn = own
            recording.context.facts?.memoryPressureSource = own ? "cgroup v2 /sys/fs/cgroup/unified/app" : "system"
            return builder.build(recording, images: images, outcome: .recovered)
        }
        let paging = hang(own: true)
        #expect(paging.context.verdict == .paging && paging.context.majorFaults == 16_384 && paging.context.memoryStallMs == 600)
        #expect(HangReportSummary.verdictLine(paging) == "paging: waited for pages to be read in (16384 major page faults, stalled on memory 600 ms (cgroup v2 /sys/fs/cgroup/unified/app))")
        let system = hang(own: false)
        #expect(system.context.verdict == .starved && system.context.majorFaults == 16_384 && system.context.memoryPressureSource == "system")
        // No fault: no field.
        #expect(builder.build(limited(onCPU: 790, throttled: 0, limit: nil), images: images, outcome: .recovered).context.majorFaults == nil)
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
