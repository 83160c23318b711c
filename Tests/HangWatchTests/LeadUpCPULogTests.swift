@testable import HangWatch
@_spi(Internal) import HangWatchReport
import Testing

/// The watchdog's CPU readings for a lead-up: kept bounded and spaced, and spread over the buckets
/// they cover.
struct LeadUpCPULogTests {
    /// A reading at `milliseconds` of thread `tid`: on a CPU `onCPU`, queued `queued`, throttled
    /// `throttled` milliseconds so far.
    static func reading(_ milliseconds: UInt64, onCPU: UInt64, queued: UInt64, throttled: UInt64? = nil) -> HangContextCounters {
        HangContextCounters(
            microseconds: milliseconds * 1000,
            schedule: ProcTask.SchedStat(onCPUNanoseconds: onCPU * 1_000_000, runQueueNanoseconds: queued * 1_000_000),
            throttling: throttled.map { CgroupCPU.Throttling(throttledNanoseconds: $0 * 1_000_000) })
    }

    static func span(_ from: UInt64, _ to: UInt64) -> (start: UInt64, end: UInt64) { (from * 1000, to * 1000) }

    @Test func aDifferenceIsSpreadOverTheBucketsItCoversByTime() throws {
        var log = LeadUpCPULog(buckets: 5)
        log.note(Self.reading(50, onCPU: 0, queued: 0, throttled: 0), tid: 7)
        log.note(Self.reading(250, onCPU: 100, queued: 60, throttled: 40), tid: 7)
        let figures = log.figures(of: [Self.span(0, 100), Self.span(100, 200), Self.span(200, 300), Self.span(300, 400)])
        let first = try #require(figures[0])
        #expect(first.coveredNanoseconds == 50_000_000)
        #expect(first.onCPUNanoseconds == 25_000_000 && first.runQueueNanoseconds == 15_000_000 && first.throttledNanoseconds == 10_000_000)
        let second = try #require(figures[1])
        #expect(second.coveredNanoseconds == 100_000_000 && second.onCPUNanoseconds == 50_000_000 && second.throttledNanoseconds == 20_000_000)
        #expect(figures[2]?.coveredNanoseconds == 50_000_000)
        #expect(figures[3] == nil, "after the last reading nothing is covered")
    }

    /// Readings more than a second apart (the watchdog parked: the loop slept), of another thread,
    /// or with a counter that went back cover nothing between them; throttling read on one side only
    /// leaves it unknown where that difference covers.
    @Test func whatADifferenceCannotTellIsLeftUncovered() throws {
        var log = LeadUpCPULog(buckets: 50)
        log.note(Self.reading(0, onCPU: 0, queued: 0), tid: 7)
        log.note(Self.reading(1_500, onCPU: 10, queued: 0), tid: 7)  // 1.5 s later
        log.note(Self.reading(1_700, onCPU: 100, queued: 0), tid: 8)  // another thread
        log.note(Self.reading(1_900, onCPU: 50, queued: 0), tid: 8)  // went back
        log.note(Self.reading(2_100, onCPU: 150, queued: 20, throttled: 5), tid: 8)
        let figures = log.figures(of: [Self.span(0, 1_500), Self.span(1_500, 1_900), Self.span(1_900, 2_100)])
        #expect(figures[0] == nil && figures[1] == nil)
        let last = try #require(figures[2])
        #expect(last.onCPUNanoseconds == 100_000_000 && last.runQueueNanoseconds == 20_000_000)
        #expect(last.throttledNanoseconds == nil, "throttling read at one end only")
    }

    /// Wakes every 30 ms keep readings at least 100 ms apart (the newest replaced until it is),
    /// and the ring holds `buckets + 16` of them, the oldest dropped: the figures of what is held
    /// still add up.
    @Test func readingsAreSpacedAndBounded() throws {
        var log = LeadUpCPULog(buckets: 10)
        for step in 0...200 {
            let time = UInt64(step) * 30
            log.note(Self.reading(time, onCPU: time / 2, queued: time / 4), tid: 7)
        }
        let readings = log.readings
        #expect(readings.count == log.capacity && log.capacity == 26)
        #expect(readings.last?.microseconds == 6_000_000, "the newest is always held")
        for (earlier, later) in zip(readings, readings.dropFirst()).dropLast() {
            #expect(later.microseconds - earlier.microseconds >= 100_000 && later.microseconds - earlier.microseconds <= 130_000)
        }
        let start = try #require(readings.first).microseconds / 1000
        let whole = try #require(log.figures(of: [Self.span(start, 6_000)])[0])
        #expect(whole.coveredNanoseconds == (6_000 - start) * 1_000_000)
        #expect(whole.onCPUNanoseconds == whole.coveredNanoseconds / 2 && whole.runQueueNanoseconds == whole.coveredNanoseconds / 4)
        #expect(LeadUpCPULog.bytes(buckets: 50) == 66 * 40)
    }

    /// The reading of a busy lead-up says how much of its busy time the thread waited for a CPU
    /// and how long its cgroup was throttled, when either is worth saying.
    @Test func theReadingNamesTheWaitAndTheThrottling() {
        func bucket(_ busy: Double, _ cpu: HangReport.LeadUp.CPU?) -> HangReport.LeadUp.Bucket {
            HangReport.LeadUp.Bucket(busyMs: busy, stretches: 0, iterations: 1, longestMs: busy, cpu: cpu)
        }
        let busy = [bucket(20, nil)] + Array(repeating: bucket(90, HangReport.LeadUp.CPU(coveredMs: 100, onCpuMs: 30, runQueueMs: 60, throttledMs: 55)), count: 10)
        let window = HangReport.LeadUp.CPU(coveredMs: 1_000, onCpuMs: 300, runQueueMs: 600, throttledMs: 1_234.4)
        #expect(LeadUpRecord.cpuPhrase(window, busy: busy) == ", 67 % of it waiting for a CPU (its cgroup throttled 1234 ms)")
        let unthrottled = HangReport.LeadUp.CPU(coveredMs: 1_000, onCpuMs: 300, runQueueMs: 600, throttledMs: nil)
        #expect(LeadUpRecord.cpuPhrase(unthrottled, busy: busy) == ", 67 % of it waiting for a CPU")
        let onlyThrottled = HangReport.LeadUp.CPU(coveredMs: 1_000, onCpuMs: 850, runQueueMs: 50, throttledMs: 30)
        #expect(LeadUpRecord.cpuPhrase(onlyThrottled, busy: busy) == ", its cgroup throttled 30 ms")
        let calm = HangReport.LeadUp.CPU(coveredMs: 1_000, onCpuMs: 850, runQueueMs: 50, throttledMs: 9)
        #expect(LeadUpRecord.cpuPhrase(calm, busy: busy) == "")
        let short = HangReport.LeadUp.CPU(coveredMs: 99, onCpuMs: 0, runQueueMs: 99, throttledMs: 99)
        #expect(LeadUpRecord.cpuPhrase(short, busy: busy) == "")
    }
}
