@_spi(Internal) import HangWatchReport
import Testing

/// The CPU limit and throttling counters of a cgroup. The v1 fixtures are real files of the
/// project's VM (`/work/proto/containers/samples/v1-cpu-hwproto/`: a 0.2-CPU test cgroup). This VM
/// cannot enable the v2 cpu controller (its v1 hierarchy holds it), so the v2 `cpu.max`,
/// `cpu.stat` and `cpu.stat.local` texts are written by hand in the kernel documentation's format
/// (Documentation/admin-guide/cgroup-v2.rst); the v2 `cpu.stat` without the controller is real.
@Suite struct CgroupCPUTests {
    @Test func aV1QuotaIsCoresAndMinusOneIsNoLimit() throws {
        // samples/v1-cpu-hwproto/cpu.cfs_quota_us and cpu.cfs_period_us.
        let limit = try #require(CgroupCPU.parseV1(quota: "20000\n", period: "100000\n"))
        #expect(limit.cores == 0.2)
        #expect(CgroupCPU.parseV1(quota: "-1\n", period: "100000\n") == nil)
        #expect(CgroupCPU.parseV1(quota: "150000", period: "100000")?.cores == 1.5)
        for (quota, period) in [("", "100000"), ("20000", "0"), ("0", "100000"), ("abc", "100000"), ("20000 1", "100000")] {
            #expect(CgroupCPU.parseV1(quota: quota, period: period) == nil, "\(quota) / \(period)")
        }
    }

    @Test func aV2MaxIsCoresAndMaxIsNoLimit() {
        // Hand-written in cgroup-v2.rst's form: "$MAX $PERIOD", default "max 100000".
        #expect(CgroupCPU.parseV2(max: "20000 100000\n")?.cores == 0.2)
        #expect(CgroupCPU.parseV2(max: "max 100000\n") == nil)
        #expect(CgroupCPU.parseV2(max: "250000 100000\n")?.cores == 2.5)
        for bad in ["", "20000", "20000 100000 5", "-1 100000", "20000 0"] {
            #expect(CgroupCPU.parseV2(max: bad) == nil, "\(bad)")
        }
    }

    /// Each level caps its whole subtree; measured: v1 refuses a child quota above its parent's,
    /// but a child may be unlimited (-1) under a limited parent, or tighter.
    @Test func theTightestLevelOnThePathHolds() throws {
        let parent = CgroupCPU.Limit(quotaMicroseconds: 20_000, periodMicroseconds: 100_000)
        let inner = CgroupCPU.Limit(quotaMicroseconds: 10_000, periodMicroseconds: 100_000)
        let wide = CgroupCPU.Limit(quotaMicroseconds: 400_000, periodMicroseconds: 100_000)
        #expect(try #require(CgroupCPU.tightest([nil, parent, nil])) == (parent, 1))
        #expect(try #require(CgroupCPU.tightest([inner, parent, nil])) == (inner, 0))
        #expect(try #require(CgroupCPU.tightest([wide, parent])) == (parent, 1))
        // A tie: the innermost.
        let same = CgroupCPU.Limit(quotaMicroseconds: 40_000, periodMicroseconds: 200_000)
        #expect(try #require(CgroupCPU.tightest([same, parent])).level == 0)
        #expect(CgroupCPU.tightest([nil, nil]) == nil)
        #expect(CgroupCPU.tightest([]) == nil)
    }

    @Test func v1CountersAreNanosecondsAndV2CountersMicroseconds() throws {
        // samples/v1-cpu-hwproto/cpu.stat and cpu.stat.local.
        let v1 = try #require(CgroupCPU.parseThrottling("nr_periods 503\nnr_throttled 420\nthrottled_time 32688160322\nnr_bursts 0\nburst_time 0\n"))
        #expect(v1 == CgroupCPU.Throttling(periods: 503, throttledPeriods: 420, throttledNanoseconds: 32_688_160_322))
        #expect(CgroupCPU.parseThrottling("throttled_time 32688160322\n") == CgroupCPU.Throttling(throttledNanoseconds: 32_688_160_322))
        // Hand-written in cgroup-v2.rst's form.
        let v2 = try #require(CgroupCPU.parseThrottling(
            "usage_usec 1321228\nuser_usec 584586\nsystem_usec 736641\nnice_usec 0\nnr_periods 12\nnr_throttled 9\nthrottled_usec 717000\nnr_bursts 0\nburst_usec 0\n"))
        #expect(v2 == CgroupCPU.Throttling(periods: 12, throttledPeriods: 9, throttledNanoseconds: 717_000_000))
        #expect(CgroupCPU.parseThrottling("throttled_usec 623900\n")?.throttledNanoseconds == 623_900_000)
        // Real: a v2 cpu.stat without the cpu controller (samples/v2-unified-hwproto/cpu.stat) has no counter.
        #expect(CgroupCPU.parseThrottling("usage_usec 1321228\nuser_usec 584586\nsystem_usec 736641\nnice_usec 0\n") == nil)
        #expect(CgroupCPU.parseThrottling("") == nil)
        #expect(CgroupCPU.parseThrottling("throttled_time x\nnr_periods") == nil)
    }
}
