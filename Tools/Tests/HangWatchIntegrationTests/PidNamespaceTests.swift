import Foundation
@_spi(Internal) import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// A service in a pid namespace of its own (`unshare -p -f --mount-proc`, what every container
/// runtime does), seen from the host: it is pid 1 there and writes `.heartbeat-1-<namespace>`;
/// `hangwatch dump <host pid>` finds and asks it, the agent gives its reports the host's pid and
/// keeps it alive while it runs (its ongoing report left alone, its heartbeat kept), and calls it
/// gone once it is killed. As root (unshare).
@Suite(.serialized) struct PidNamespaceTests {
    static var waits: String { BuiltExecutable.releasePath("hangwatch-waits") }
    static var cli: String { BuiltExecutable.path("hangwatch") }

    /// A namespaced `hangwatch-waits CASE`, its reports in `directory/waits`; the host's pid of the
    /// service (the child of `unshare`), once it runs.
    static func start(_ waitCase: String, in directory: ReportDirectory, stayMilliseconds: Int = 0) throws -> (RunningExecutable, Int32) {
        let reports = directory.path + "/waits"
        try FileManager.default.createDirectory(atPath: reports, withIntermediateDirectories: true)
        var arguments = ["-p", "-f", "--mount-proc", "--kill-child", waits, waitCase, "--reports", reports, "--hold-ms", "700"]
        if stayMilliseconds > 0 { arguments += ["--stay-ms", String(stayMilliseconds)] }
        let unshare = try RunningExecutable("/usr/bin/unshare", arguments)
        let child = Eventually.value(timeout: 20, {
            (try? String(contentsOfFile: "/proc/\(unshare.pid)/task/\(unshare.pid)/children", encoding: .utf8))
                .flatMap { $0.split(separator: " ").first.flatMap { Int32($0) } }
        }, until: { $0 != nil }) ?? nil
        let pid = try #require(child, "unshare started no service: \(unshare.errors)")
        return (unshare, pid)
    }

    @Test func aNamespacedServiceIsDumpedFromTheHostAndItsReportsNameBothPids() throws {
        try #require(getuid() == 0, "run as root (unshare)")
        try #require(FileManager.default.isExecutableFile(atPath: Self.waits), "build it: \(BuiltExecutable.releaseBuildCommand("hangwatch-waits"))")
        let directory = ReportDirectory("pid-namespace")
        let (service, pid) = try Self.start("sleep", in: directory, stayMilliseconds: 60_000)
        let waits = ReportDirectory(path: directory.path + "/waits")
        defer {
            service.signal(SIGKILL)
            _ = service.finish(within: 10)
        }
        let namespace = try #require(NamespacedProcess.pidNamespace(of: String(pid)))
        try #require(namespace != NamespacedProcess.ownPIDNamespace, "unshare made no pid namespace")
        // Its heartbeat, named as its namespace numbers it.
        let heartbeat = directory.path + "/waits/" + MonitorHeartbeat.fileName(pid: 1, pidNamespace: namespace)
        #expect(heartbeat.hasSuffix("/.heartbeat-1-\(namespace)"))
        #expect(Eventually.holds(timeout: 20) { (try? MonitorHeartbeat.read(path: heartbeat))?.watchdogTID ?? 0 != 0 }, "\(waits.listing())")
        let page = try MonitorHeartbeat.read(path: heartbeat)
        #expect(page.pid == 1 && page.pidNamespace == namespace, "\(page)")
        // The sleep's report, finished, pid 1 and the namespace.
        #expect(Eventually.holds(timeout: 20) { service.output.contains("hang over") })
        let report = try #require(Eventually.value(timeout: 20, { waits.reports().first { $0.outcome != .ongoing } }, until: { $0 != nil }) ?? nil)
        #expect(report.pid == 1 && report.process.pidNamespace == namespace, "\(report.pid) \(String(describing: report.process.pidNamespace))")

        // hangwatch dump <host pid>: found by NSpid and the namespace, asked through the host's ids.
        let dump = try ExecutableRun.run(Self.cli, ["dump", String(pid), "--dir", directory.path, "--color", "never"], timeout: 30)
        #expect(dump.status == 0, "\(dump.errors)")
        #expect(dump.output.hasPrefix("thread dump of waits (pid 1"), "\(dump.output.prefix(300))")

        // The agent: the report gets the host's pid; `show` says both.
        let agent = try AgentProcess(root: directory.path, arguments: ["--set", "HANGWATCHD_ENRICH_DELAY=0s"])
        let named = Eventually.value(timeout: 30, { waits.reports().first { $0.id == report.id }?.process.hostPid }, until: { $0 != nil }) ?? nil
        #expect(named == pid, "the agent's log: \(agent.log.suffix(2000))")
        let show = try ExecutableRun.run(Self.cli, ["show", report.id, "--dir", directory.path, "--color", "never", "--no-symbolicate"], timeout: 30)
        #expect(show.output.contains("(pid 1, \(pid) on the host, host "), "\(show.output.prefix(600))")
    }

    /// The agent's liveness of a namespaced service: pid 1 there is the host's init to a reader of
    /// the host's /proc (alive forever, and with another start time: a live service taken for one
    /// gone). Deadlocked, its report stays ongoing and its heartbeat kept while it runs; killed, the
    /// report is finished as a fatal hang and the heartbeat removed.
    @Test func theAgentKeepsANamespacedServiceAliveWhileItRunsAndCallsItGoneWhenKilled() throws {
        try #require(getuid() == 0, "run as root (unshare)")
        try #require(FileManager.default.isExecutableFile(atPath: Self.waits), "build it: \(BuiltExecutable.releaseBuildCommand("hangwatch-waits"))")
        let directory = ReportDirectory("pid-namespace-liveness")
        let (service, pid) = try Self.start("deadlock", in: directory)
        let waits = ReportDirectory(path: directory.path + "/waits")
        defer {
            service.signal(SIGKILL)
            _ = service.finish(within: 10)
        }
        let namespace = try #require(NamespacedProcess.pidNamespace(of: String(pid)))
        let heartbeat = directory.path + "/waits/" + MonitorHeartbeat.fileName(pid: 1, pidNamespace: namespace)
        #expect(Eventually.holds(timeout: 20) { waits.reports().contains { $0.context.verdict == .deadlocked } }, "\(waits.listing())")
        let agent = try AgentProcess(root: directory.path)
        // Several of the agent's passes (200 ms apart): the service runs, so nothing changes.
        #expect(agent.waitForMessage(timeout: 20) { $0.contains("READY=1") } != nil, "\(agent.log.suffix(2000))")
        usleep(2_000_000)
        #expect(FileManager.default.fileExists(atPath: heartbeat), "the agent removed a live service's heartbeat: \(agent.log.suffix(2000))")
        #expect(waits.reports().allSatisfy { $0.outcome == .ongoing }, "\(waits.reports().map(\.outcome))")
        // Killed: the report finished as a fatal hang, the heartbeat gone.
        kill(pid, SIGKILL)
        #expect(Eventually.holds(timeout: 20) { waits.reports().contains { $0.outcome == .processExited } }, "\(agent.log.suffix(2000))")
        #expect(Eventually.holds(timeout: 20) { !FileManager.default.fileExists(atPath: heartbeat) }, "\(agent.log.suffix(2000))")
    }

    /// A heartbeat planted in a directory a container writes (its root is root), naming a host
    /// process with everything copied right (its pid, its start time, a real-time signal, one of
    /// its threads): the process does not map that file, so it is refused, and the victim lives.
    @Test func aPlantedHeartbeatNamingAHostProcessIsRefused() throws {
        try #require(getuid() == 0, "run as root: the planted file is root's, as a container's root writes it")
        // Two threads (a watchdog must be one of them), neither with a handler for the signal.
        let victim = try RunningExecutable(
            "/usr/bin/env", ["python3", "-c", "import threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); time.sleep(60)"])
        defer {
            victim.signal(SIGKILL)
            _ = victim.finish(within: 5)
        }
        let directory = ReportDirectory("pid-namespace-planted")
        let service = directory.path + "/billing"
        try FileManager.default.createDirectory(atPath: service, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let thread = try #require(
            Eventually.value(timeout: 10, { NamespacedProcess.threads(of: victim.pid).values.first { $0 != victim.pid } }, until: { $0 != nil }) ?? nil,
            "the victim has no second thread")
        let page = MonitorHeartbeat(
            pid: victim.pid, startTimeTicks: try #require(ProcStat.read(pid: victim.pid)?.startTimeTicks), startedUnixMilliseconds: 1,
            tickMonotonicNanoseconds: 1, tickUnixMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000), intervalMilliseconds: 100,
            state: .watching, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000,
            captureSignal: __libc_current_sigrtmin(), watchdogTID: thread,
            pidNamespace: NamespacedProcess.ownPIDNamespace ?? 0)
        let path = service + "/" + MonitorHeartbeat.fileName(pid: victim.pid)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(page.encoded()), attributes: [.posixPermissions: 0o600]))
        let result = try ExecutableRun.run(Self.cli, ["dump", String(victim.pid), "--dir", directory.path, "--timeout", "2s"], timeout: 30)
        #expect(result.status == 3, "\(result.status) \(result.output)")
        #expect(result.errors.contains("refusing \(path): process \(victim.pid) does not map this file"), "\(result.errors)")
        usleep(200_000)
        #expect(victim.process.isRunning, "the victim died: \(result.errors)")
    }
}
