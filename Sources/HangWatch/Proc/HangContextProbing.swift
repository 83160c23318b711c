@_spi(Internal) import HangWatchReport

/// What holds a hung thread back from outside its code, as the watchdog reads it: the CPU limit of
/// its cgroup and the time it was throttled, a freezer, a stop by a signal or a debugger, page
/// faults and memory pressure. One probe per monitored thread, made by the environment
/// (`WatchdogEnvironment.contextProbe`), used on the watchdog's thread only: its files are opened
/// once and re-read with `pread`, nothing allocated per read (`LinuxHangContextProbe`); tests
/// script one.
///
/// When each is read: `edge` at the first look at a busy stretch (so a hang's figures start with
/// it, not a threshold later), `counters` at detection and at the hang's end, `look` with each
/// sample (the throttling so far and the freezer's state, which only a live read can see), `pace`
/// at the watchdog's other wakes while the loop is busy (the lead-up's CPU figures: `LeadUpCPULog`),
/// `facts` once per hang, at detection (the limit may change; the files are walked then).
package protocol HangContextProbing: AnyObject {
    func facts() -> HangContextFacts
    /// Every counter.
    func counters(at microseconds: UInt64) -> HangContextCounters
    /// At a busy stretch's first look: every counter but the tracer.
    func edge(at microseconds: UInt64) -> HangContextCounters
    /// With each sample: the cgroup's throttled time and the freezer's state only.
    func look(at microseconds: UInt64) -> HangContextCounters
    /// At a wake while the loop is busy: the thread's CPU and run-queue time and the cgroup's
    /// throttled time only.
    func pace(at microseconds: UInt64) -> HangContextCounters
}

/// What a hang's context reads once, at detection.
package struct HangContextFacts: Sendable, Equatable {
    /// The tightest CPU limit on the thread's cpu cgroup path (nil: none visible).
    package var cpuLimit: HangReport.CPULimit?
    /// CPUs online, and those the process may run on (its affinity).
    package var hostCPUs: Int
    package var allowedCPUs: Int
    /// The thread's v1 freezer cgroup when it is not the hierarchy's root: a freezer there can stop
    /// the process and leave no trace after the thaw.
    package var v1FreezerCgroup: String?
    /// The thread's v2 cgroup when it is not the hierarchy's root (its freezer's `frozen_usec`).
    package var v2Cgroup: String?
    /// Where `memoryStallMicroseconds` comes from: `cgroup v2 <path>` (the thread's own cgroup) or
    /// `system` (nil: unreadable).
    package var memoryPressureSource: String?
    /// The memory pressure is the thread's own cgroup's (not the whole system's).
    package var memoryPressureIsOwn: Bool
    /// The SIGCONT stamp is installed and still the handler: a stop by a signal would be seen.
    package var continueStampInstalled: Bool

    package init(
        cpuLimit: HangReport.CPULimit? = nil, hostCPUs: Int, allowedCPUs: Int, v1FreezerCgroup: String? = nil, v2Cgroup: String? = nil,
        memoryPressureSource: String? = nil, memoryPressureIsOwn: Bool = false, continueStampInstalled: Bool = false
    ) {
        self.cpuLimit = cpuLimit
        self.hostCPUs = hostCPUs
        self.allowedCPUs = allowedCPUs
        self.v1FreezerCgroup = v1FreezerCgroup
        self.v2Cgroup = v2Cgroup
        self.memoryPressureSource = memoryPressureSource
        self.memoryPressureIsOwn = memoryPressureIsOwn
        self.continueStampInstalled = continueStampInstalled
    }

    /// The CPUs the process may use at once: the fewest of the online CPUs, its affinity and its
    /// limit rounded up (0.2 CPU: 1).
    package var cpuCount: Int {
        let limited = cpuLimit.map { Int(($0.cores - 1e-9).rounded(.up)) } ?? Int.max
        return max(1, min(hostCPUs, allowedCPUs, limited))
    }
}

/// The counters a hang's figures are differences of, read at one moment. Nil: not readable here
/// (no such cgroup file, no stamp), or not read by a `look`.
package struct HangContextCounters: Sendable, Equatable {
    /// When they were read (`CLOCK_MONOTONIC`, µs).
    package var microseconds: UInt64
    /// The thread's CPU and run-queue time.
    package var schedule: ProcTask.SchedStat?
    package var majorFaults: UInt64?
    /// The cgroup's throttled time (`cpu.stat.local`, else the limiting level's `cpu.stat`) and
    /// throttled periods.
    package var throttling: CgroupCPU.Throttling?
    /// v2 `cgroup.stat.local` `frozen_usec` (kernel 6.18 on).
    package var frozenMicroseconds: UInt64?
    /// The freezer's state now (v1 `freezer.state`, v2 `cgroup.events`): true while freezing or frozen.
    package var freezing: Bool?
    /// SIGCONTs received so far, and the latest one's time (µs; nil without the stamp).
    package var continues: UInt64?
    package var lastContinueMicroseconds: UInt64?
    /// Memory pressure's `some` total (µs).
    package var memoryStallMicroseconds: UInt64?
    /// The thread's tracer (`TracerPid`; 0: none).
    package var tracerPID: Int32?

    package init(
        microseconds: UInt64, schedule: ProcTask.SchedStat? = nil, majorFaults: UInt64? = nil, throttling: CgroupCPU.Throttling? = nil,
        frozenMicroseconds: UInt64? = nil, freezing: Bool? = nil, continues: UInt64? = nil, lastContinueMicroseconds: UInt64? = nil,
        memoryStallMicroseconds: UInt64? = nil, tracerPID: Int32? = nil
    ) {
        self.microseconds = microseconds
        self.schedule = schedule
        self.majorFaults = majorFaults
        self.throttling = throttling
        self.frozenMicroseconds = frozenMicroseconds
        self.freezing = freezing
        self.continues = continues
        self.lastContinueMicroseconds = lastContinueMicroseconds
        self.memoryStallMicroseconds = memoryStallMicroseconds
        self.tracerPID = tracerPID
    }
}
