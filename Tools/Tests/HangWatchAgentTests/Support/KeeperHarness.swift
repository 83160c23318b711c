import Foundation
import HangWatchReport
import HangWatchSymbolication
import HangWatchTestSupport
import Logging

@testable import HangWatchAgent

/// A `SpoolKeeper` on a real spool in a temporary directory, with everything else scripted: time
/// moves when the test says, processes are what the test lists, exporters and systemd record what
/// they are told, and the log is kept in memory. Passes run on the test's thread.
final class KeeperHarness {
    let fixture: SpoolFixture
    let clock: ManualClock
    let processes: ScriptedProcesses
    let notifier = RecordingNotifier()
    /// Counts at once (like the metrics).
    let counter = RecordingExporter()
    /// Waits for names (like the OTLP log records).
    let records = RecordingExporter(waitsForNames: true)
    let log = LogRecorder()
    let keeper: SpoolKeeper
    var configuration: AgentConfiguration

    /// `fixture`, `processes`: another harness's (an agent restarted on the same spool and host).
    init(
        _ name: String = #function, clock: ManualClock = ManualClock(), fixture: SpoolFixture? = nil, processes: ScriptedProcesses? = nil,
        configure: (inout AgentConfiguration) -> Void = { _ in }
    ) throws {
        self.fixture = try fixture ?? SpoolFixture(name)
        self.processes = processes ?? ScriptedProcesses()
        self.clock = clock
        var configuration = AgentConfiguration()
        configuration.reportRoot = self.fixture.root
        configuration.metricsListen = nil
        configuration.selfThreshold = .zero
        configure(&configuration)
        self.configuration = configuration
        keeper = SpoolKeeper(
            spool: self.fixture.spool, symbolicator: Symbolicator(debugDirectories: configuration.debugDirectories),
            exports: ExportHub([counter, records]), notifier: notifier, clock: clock, processes: self.processes, logger: log.logger)
        keeper.requestPass = { [requests] pass in requests.add(pass) }
    }

    /// Passes the keeper asked for (its naming budget ran out).
    private let requests = Requests()

    private final class Requests: @unchecked Sendable {
        var passes: [SpoolPass] = []
        func add(_ pass: SpoolPass) { passes.append(pass) }
    }

    var requestedPasses: [SpoolPass] { requests.passes }

    var state: SpoolState { keeper.state }
    var spool: Spool { fixture.spool }

    func run(_ pass: SpoolPass = .full, enrich: Bool = true) {
        keeper.run(pass, configuration: configuration, enrich: enrich)
    }

    /// The report `file` as it is on disk now.
    func read(_ file: Spool.File) throws -> HangReport {
        try ReportReader().read(path: spool.path(of: file))
    }

    /// The identity of the file at `relative` (nil: gone), to tell whether it was touched.
    func identity(_ relative: String) -> (inode: UInt64, size: Int64, modified: Int64)? {
        var info = stat()
        guard lstat(fixture.path(relative), &info) == 0 else { return nil }
        return (UInt64(info.st_ino), Int64(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }
}
