import Dispatch
import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Logging
import Testing

/// The pool watch's decisions on scripted time: a probe per threshold, its start delay counted,
/// a probe not started within the threshold is one starvation, captured at detection, followed
/// while it lasts, and ended exactly when the probe starts. Threshold 250 ms, sampling every 50 ms;
/// times in milliseconds from the script's start.
@Suite struct PoolWatchTests {
    final class Harness: @unchecked Sendable {
        let clock = ScriptedClock(start: 1_000_000_000)
        let environment: FakeWatchdogEnvironment
        let histogram = PoolProbeHistogram(bounds: [100_000, 1_000_000, 250_000_000])
        let sink = RecordingPoolSink()
        let threads: ScriptedPoolThreads
        /// Delay of each probe's start in milliseconds, by probe number (a missing one: `defaultDelay`).
        var delays: [Int: Double] = [:]
        var defaultDelay = 0.04
        private(set) var enqueued: [UInt64] = []
        var watch: PoolWatch!

        init() {
            environment = FakeWatchdogEnvironment(clock: clock)
            threads = ScriptedPoolThreads(clock: clock)
            watch = PoolWatch(
                settings: .init(thresholdMicroseconds: { 250_000 }, sampleIntervalMicroseconds: 50_000, serviceName: "svc"),
                environment: environment, enqueue: { [unowned self] slot in self.enqueue(slot) }, threads: threads, sink: sink,
                histogram: histogram, statistics: nil, images: nil, logger: Logger(label: "test"))
            clock.whenScriptEnds = { [unowned self] in watch.requestStop() }
        }

        func t(_ milliseconds: Double) -> UInt64 { 1_000_000_000 + UInt64(milliseconds * 1000) }
        func ms(_ microseconds: UInt64) -> Double { Double(Int64(microseconds) - 1_000_000_000) / 1000 }

        private func enqueue(_ slot: PoolProbeSlot) {
            let number = enqueued.count
            enqueued.append(clock.now)
            let delay = delays[number] ?? defaultDelay
            clock.after(UInt64(delay * 1000)) { [clock] in slot.markStarted(at: clock.now) }
        }

        /// Runs the watch until `milliseconds`.
        func run(until milliseconds: Double) {
            clock.at(t(milliseconds)) { [watch] in watch!.requestStop() }
            watch.run()
        }
    }

    @Test func aHealthyPoolIsProbedOncePerThresholdAndItsDelaysCounted() {
        let h = Harness()
        h.run(until: 2_010)
        #expect(h.sink.events.isEmpty)
        // One probe per threshold, the next as soon as the last one was looked at.
        #expect(h.enqueued.map(h.ms) == stride(from: 0.0, through: 2_000, by: 250).map { $0 })
        let delays = h.histogram.snapshot
        #expect(delays.counts == [8, 0, 0, 0] && delays.totalNanoseconds == 8 * 40_000 && delays.starvations == 0)
        // One wait per probe: the watch does not wake between them.
        #expect(h.clock.waits.count == 9)
    }

    @Test func aProbeThatWaitsPastTheThresholdIsOneStarvationEndingWhenItStarts() throws {
        let h = Harness()
        h.delays[2] = 700
        h.run(until: 3_000)

        #expect(h.sink.events == ["starved", "recovered"])
        let (recording, outcome) = try #require(h.sink.recovered.first)
        #expect(outcome == .recovered)
        #expect(h.ms(recording.startMicroseconds) == 500)
        #expect(h.ms(recording.detectedMicroseconds) == 750)
        #expect(h.ms(try #require(recording.endMicroseconds)) == 1_200)
        #expect(recording.threads.map(\.tid) == [101, 102])
        // Counted as a starvation, and its delay (700 ms) in the histogram's last bucket.
        let delays = h.histogram.snapshot
        #expect(delays.starvations == 1 && delays.counts.last == 1)
        // Probing resumes once the probe ran: the next one goes out at the first look after it.
        #expect(h.enqueued.map(h.ms).prefix(4) == [0, 250, 500, 1_200])
    }

    @Test func poolThreadsThatAppearWhileStarvedAreCapturedToo() throws {
        let h = Harness()
        h.delays[0] = 1_000
        h.threads.appearing = [(at: h.t(600), tid: 103)]
        h.run(until: 2_000)

        #expect(h.sink.events == ["starved", "progressed", "recovered"])
        let recording = try #require(h.sink.recovered.first?.recording)
        #expect(recording.threads.map(\.tid) == [101, 102, 103])
        // Looked for every sample interval until the probe started, never after.
        #expect(h.threads.looks.allSatisfy { $0 <= h.t(1_000) })
        #expect(h.ms(try #require(recording.endMicroseconds)) == 1_000)
    }

    @Test func aProbeLateButStartedBeforeTheLookIsNoStarvation() {
        let h = Harness()
        h.delays[1] = 249
        h.run(until: 1_000)
        #expect(h.sink.events.isEmpty)
        #expect(h.histogram.snapshot.counts[2] == 1)
    }

    @Test func stoppingDuringAStarvationEndsItAsMonitorStopped() throws {
        let h = Harness()
        h.defaultDelay = 10_000
        h.run(until: 400)
        let (recording, outcome) = try #require(h.sink.recovered.first)
        #expect(outcome == .monitorStopped)
        #expect(h.ms(try #require(recording.endMicroseconds)) == 400)
        #expect(h.histogram.snapshot.probes == 0)
    }
}

/// Pool threads on scripted time: 101 and 102 exist from the start, others from when they appear.
final class ScriptedPoolThreads: PoolThreadCapturing, @unchecked Sendable {
    let clock: ScriptedClock
    var appearing: [(at: UInt64, tid: Int32)] = []
    private(set) var looks: [UInt64] = []

    init(clock: ScriptedClock) {
        self.clock = clock
    }

    func capture(skipping: Set<Int32>, signalAllowed: Bool) -> [PoolThreadSample] {
        looks.append(clock.now)
        let present: [Int32] = [101, 102] + appearing.filter { $0.at <= clock.now }.map(\.tid)
        return present.filter { !skipping.contains($0) }.map { tid in
            var sample = ScriptedSampler.blocked(syscall: 230)
            sample.microseconds = clock.now
            return PoolThreadSample(tid: tid, name: "oot.default-qos", sample: sample, attached: false)
        }
    }
}

final class RecordingPoolSink: PoolSink, @unchecked Sendable {
    private(set) var events: [String] = []
    private(set) var recovered: [(recording: PoolRecording, outcome: HangReport.Outcome)] = []

    func poolStarved(_ recording: PoolRecording) { events.append("starved") }
    func poolProgressed(_ recording: PoolRecording) { events.append("progressed") }
    func poolRecovered(_ recording: PoolRecording, outcome: HangReport.Outcome) {
        events.append("recovered")
        recovered.append((recording, outcome))
    }
}
