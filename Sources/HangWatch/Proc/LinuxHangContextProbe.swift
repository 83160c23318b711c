@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// The system's `HangContextProbing` for one thread of this process: its cgroups found from
/// `/proc/self/task/<tid>/cgroup` and `/proc/self/mountinfo` (`CgroupPaths`), the files it re-reads
/// opened once, read with `pread` into one buffer.
///
/// - Throttling: the leaf's `cpu.stat.local` for the time (it counts throttling by any ancestor's
///   limit, even one a container cannot see), the limiting level's `cpu.stat` for the periods; the
///   limiting level's `cpu.stat` alone before kernel 6.6. Nothing in the hierarchy's root, which no
///   limit can throttle (v1 root: it holds `cgroup.sane_behavior`).
/// - The freezer: v1 `freezer.state` outside the root; v2 `cgroup.events` and `cgroup.stat.local`
///   (`frozen_usec`) in a cgroup that is not the root.
/// - Memory pressure: the thread's v2 cgroup's `memory.pressure` when that is not the root, else
///   `/proc/pressure/memory`.
///
/// A thread moved to another cgroup is found again at the next hang (`facts`).
final class LinuxHangContextProbe: HangContextProbing {
    private let thread: MonitoredThread
    private let files: ProcTaskFiles?
    private var cgroupText: String?
    private var opened = Opened()
    private var buffer = [UInt8](repeating: 0, count: 1024)

    /// The files re-read per look, and what the walk found.
    private struct Opened {
        var throttleTime: Int32 = -1
        var throttlePeriods: Int32 = -1
        var freezerState: Int32 = -1
        var v2Events: Int32 = -1
        var v2StatLocal: Int32 = -1
        var memoryPressure: Int32 = -1
        var cpuLevels: [String] = []
        var cpuUnified = false
        var v1FreezerCgroup: String?
        var v2Cgroup: String?
        var memorySource: String?
        var memoryIsOwn = false

        func close() {
            for fd in [throttleTime, throttlePeriods, freezerState, v2Events, v2StatLocal, memoryPressure] where fd >= 0 { Glibc.close(fd) }
        }
    }

    /// Made on the watchdog's thread, which it lets SIGCONT through (the stamp's handler then runs
    /// even in a process whose every other thread blocks it).
    init(thread: MonitoredThread) {
        self.thread = thread
        files = ProcTaskFiles(tid: thread.tid)
        if UnsafeContinueSignal.isCurrent { UnsafeContinueSignal.unblockOnCurrentThread() }
        resolve()
    }

    deinit { opened.close() }

    private static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    private static func open(_ path: String) -> Int32 { Glibc.open(path, O_RDONLY | O_CLOEXEC) }

    /// Finds the thread's cgroups and opens what is re-read (again when its `cgroup` file changed).
    private func resolve() {
        let text = SmallFile.text("/proc/self/task/\(thread.tid)/cgroup", limit: 16 << 10)
        guard text != cgroupText || cgroupText == nil else { return }
        opened.close()
        opened = Opened()
        cgroupText = text
        guard let text, let mountinfo = SmallFile.text("/proc/self/mountinfo", limit: 1 << 20) else { return }
        let paths = CgroupPaths.parse(cgroup: text, mountinfo: mountinfo)
        let unified = paths.unifiedDirectory()
        let unifiedIsRoot = unified.map { !Self.exists($0.path + "/cgroup.events") } ?? true
        if let cpu = paths.directory(controller: "cpu") ?? unified.flatMap({ Self.exists($0.path + "/cpu.max") ? $0 : nil }) {
            openThrottling(cpu, isRoot: cpu.isUnified ? unifiedIsRoot : Self.exists(cpu.path + "/cgroup.sane_behavior"))
        }
        if let freezer = paths.directory(controller: "freezer"), Self.exists(freezer.path + "/freezer.state") {
            opened.freezerState = Self.open(freezer.path + "/freezer.state")
            opened.v1FreezerCgroup = freezer.path
        }
        if let unified, !unifiedIsRoot {
            opened.v2Cgroup = unified.path
            opened.v2Events = Self.open(unified.path + "/cgroup.events")
            let local = Self.open(unified.path + "/cgroup.stat.local")
            if local >= 0, read(local, CgroupFreezer.parseFrozenMicroseconds(bytes:)) != nil { opened.v2StatLocal = local } else if local >= 0 { close(local) }
            let pressure = Self.open(unified.path + "/memory.pressure")
            if pressure >= 0, read(pressure, PressureStall.parse(bytes:)) != nil {
                (opened.memoryPressure, opened.memorySource, opened.memoryIsOwn) = (pressure, "cgroup v2 " + unified.path, true)
            } else if pressure >= 0 {
                close(pressure)
            }
        }
        if opened.memoryPressure < 0 {
            let system = Self.open("/proc/pressure/memory")
            if system >= 0, read(system, PressureStall.parse(bytes:)) != nil {
                (opened.memoryPressure, opened.memorySource) = (system, "system")
            } else if system >= 0 {
                close(system)
            }
        }
    }

    private func openThrottling(_ cpu: CgroupPaths.Directory, isRoot: Bool) {
        guard !isRoot else { return }
        opened.cpuLevels = cpu.levels
        opened.cpuUnified = cpu.isUnified
        let local = Self.open(cpu.path + "/cpu.stat.local")
        if local >= 0, read(local, CgroupCPU.parseThrottling(bytes:))?.throttledNanoseconds != nil {
            opened.throttleTime = local
        } else if local >= 0 {
            close(local)
        }
        // The periods (and, before 6.6, the time): the level whose quota holds, else the leaf.
        let level = limit().level
        let stat = Self.open(opened.cpuLevels[level] + "/cpu.stat")
        if stat >= 0, read(stat, CgroupCPU.parseThrottling(bytes:))?.throttledPeriods != nil { opened.throttlePeriods = stat } else if stat >= 0 { close(stat) }
    }

    /// The tightest limit on the cpu path, and its level (0 when none).
    private func limit() -> (limit: HangReport.CPULimit?, level: Int) {
        let unified = opened.cpuUnified
        let limits = opened.cpuLevels.map { level -> CgroupCPU.Limit? in
            if unified { return SmallFile.text(level + "/cpu.max").flatMap { CgroupCPU.parseV2(max: $0) } }
            guard let quota = SmallFile.text(level + "/cpu.cfs_quota_us"), let period = SmallFile.text(level + "/cpu.cfs_period_us") else { return nil }
            return CgroupCPU.parseV1(quota: quota, period: period)
        }
        guard let tightest = CgroupCPU.tightest(limits) else { return (nil, 0) }
        let source = unified ? "cgroup v2 cpu.max" : "cgroup v1 cpu.cfs_quota_us"
        return (HangReport.CPULimit(cores: tightest.limit.cores, source: source, path: opened.cpuLevels[tightest.level]), tightest.level)
    }

    private func read<T>(_ fd: Int32, _ parse: (ArraySlice<UInt8>) -> T?) -> T? {
        guard fd >= 0 else { return nil }
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return parse(buffer[0..<count])
    }

    func facts() -> HangContextFacts {
        resolve()
        let status = ProcStatus.read(path: "/proc/self/task/\(thread.tid)/status")
        let host = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        return HangContextFacts(
            cpuLimit: opened.cpuLevels.isEmpty ? nil : limit().limit, hostCPUs: host, allowedCPUs: status?.allowedCPUCount ?? host,
            v1FreezerCgroup: opened.v1FreezerCgroup, v2Cgroup: opened.v2Cgroup, memoryPressureSource: opened.memorySource, memoryPressureIsOwn: opened.memoryIsOwn,
            continueStampInstalled: UnsafeContinueSignal.isCurrent)
    }

    func counters(at microseconds: UInt64) -> HangContextCounters {
        counters(at: microseconds, tracer: true)
    }

    private func counters(at microseconds: UInt64, tracer: Bool) -> HangContextCounters {
        var counters = look(at: microseconds)
        counters.schedule = files?.readSchedStat()
        counters.majorFaults = files?.readStat()?.majorFaults
        if let periods = read(opened.throttlePeriods, CgroupCPU.parseThrottling(bytes:)) {
            counters.throttling = CgroupCPU.Throttling(
                periods: periods.periods, throttledPeriods: periods.throttledPeriods,
                throttledNanoseconds: counters.throttling?.throttledNanoseconds ?? periods.throttledNanoseconds)
        }
        counters.frozenMicroseconds = read(opened.v2StatLocal, CgroupFreezer.parseFrozenMicroseconds(bytes:))
        // (Two loads. Whether the stamp is installed, and so whether no SIGCONT means none came, is
        // a fact of the hang's.)
        let stamp = UnsafeContinueSignal.stamp()
        counters.continues = stamp.count
        counters.lastContinueMicroseconds = stamp.lastMicroseconds
        counters.memoryStallMicroseconds = read(opened.memoryPressure, PressureStall.parse(bytes:))?.someMicroseconds
        if tracer { counters.tracerPID = files?.readTracerPID() }
        return counters
    }

    /// Every counter but the tracer (whose `status` file is the longest to read).
    func edge(at microseconds: UInt64) -> HangContextCounters {
        counters(at: microseconds, tracer: false)
    }

    func look(at microseconds: UInt64) -> HangContextCounters {
        var counters = HangContextCounters(microseconds: microseconds, throttling: throttledTime())
        if let state = read(opened.freezerState, CgroupFreezer.parseV1State(bytes:)) {
            counters.freezing = state.isFreezing
        }
        if let frozen = read(opened.v2Events, CgroupFreezer.parseV2Frozen(bytes:)) {
            counters.freezing = (counters.freezing ?? false) || frozen
        }
        return counters
    }

    func pace(at microseconds: UInt64) -> HangContextCounters {
        HangContextCounters(microseconds: microseconds, schedule: files?.readSchedStat(), throttling: throttledTime())
    }

    /// The cgroup's throttled time so far. (Before kernel 6.6 there is no cpu.stat.local: the
    /// limiting level's cpu.stat has the time.)
    private func throttledTime() -> CgroupCPU.Throttling? {
        let timeFile = opened.throttleTime >= 0 ? opened.throttleTime : opened.throttlePeriods
        return read(timeFile, CgroupCPU.parseThrottling(bytes:)).map { CgroupCPU.Throttling(throttledNanoseconds: $0.throttledNanoseconds) }
    }
}
