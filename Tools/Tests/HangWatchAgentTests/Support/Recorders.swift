import Foundation
@_spi(Internal) import HangWatchReport
import Logging
import Synchronization

@testable import HangWatchAgent

/// A `SystemdNotifying` that keeps every message (as if systemd listened at `socketPath`).
final class RecordingNotifier: SystemdNotifying {
    let socketPath: String?
    private let sent = Mutex<[String]>([])
    /// Whether sends succeed.
    let delivers: Bool

    init(socketPath: String? = "/run/systemd/notify", delivers: Bool = true) {
        self.socketPath = socketPath
        self.delivers = delivers
    }

    var messages: [String] { sent.withLock { $0 } }

    /// The `STATUS=` values sent, in order.
    var statuses: [String] {
        messages.flatMap { $0.split(separator: "\n") }.filter { $0.hasPrefix("STATUS=") }.map { String($0.dropFirst(7)) }
    }

    func notify(_ message: String) -> Bool {
        guard socketPath != nil else { return false }
        sent.withLock { $0.append(message) }
        return delivers
    }
}

/// A `HangExporter` that keeps what it is told.
final class RecordingExporter: HangExporter {
    let waitsForNames: Bool
    private let state = Mutex<(hangs: [FinishedHang], drops: [DropReason: Int], gauges: [SpoolGauges], shutdown: Bool)>(([], [:], [], false))

    init(waitsForNames: Bool = false) {
        self.waitsForNames = waitsForNames
    }

    var hangs: [FinishedHang] { state.withLock { $0.hangs } }
    var drops: [DropReason: Int] { state.withLock { $0.drops } }
    var lastGauges: SpoolGauges? { state.withLock { $0.gauges.last } }
    var publishCount: Int { state.withLock { $0.gauges.count } }
    var isShutDown: Bool { state.withLock { $0.shutdown } }

    func hangFinished(_ hang: FinishedHang) { state.withLock { $0.hangs.append(hang) } }
    func reportsDropped(_ reason: DropReason, count: Int) { state.withLock { $0.drops[reason, default: 0] += count } }
    func publish(_ gauges: SpoolGauges) { state.withLock { $0.gauges.append(gauges) } }
    func shutdown() async { state.withLock { $0.shutdown = true } }
}

/// A `ProcessTable` the test writes: pids it does not list are gone.
final class ScriptedProcesses: ProcessTable {
    private let table = Mutex<[Int32: ProcStat]>([:])
    private let lookups = Mutex<[Int32]>([])

    subscript(pid: Int32) -> ProcStat? {
        get { table.withLock { $0[pid] } }
        set { table.withLock { $0[pid] = newValue } }
    }

    /// Every pid looked up, in order.
    var looked: [Int32] { lookups.withLock { $0 } }

    func status(of pid: Int32) -> ProcStat? {
        lookups.withLock { $0.append(pid) }
        return table.withLock { $0[pid] }
    }

    /// Namespaced processes the test places: (pid, namespace) -> the host's pid.
    let hosts = Mutex<[String: Int32]>([:])

    func hostPID(of pid: Int32, pidNamespace: UInt64?, startTicks: UInt64) -> Int32? {
        guard let pidNamespace, pidNamespace != 0 else { return pid }
        return hosts.withLock { $0["\(pid)@\(pidNamespace)"] }
    }
}
