import Foundation
@_spi(Internal) import HangWatchReport
import Logging
import Synchronization

/// Answers `hangwatch dump PID` for one monitor: on a request, the watchdog takes every thread's
/// state, stack and waits and writes them as a report (`source` `dump`) to `.dump-<nonce>.json` in
/// the report directory; a refused request gets `.dump-<nonce>.refused`, one line saying why. Both
/// are readable by the service's user only (the CLI runs as that user or as root) and removed by
/// the CLI once read; an answer nobody took within `unclaimedAnswerSeconds` is removed here (the
/// dump lane, `DumpLane`, wakes the watchdog for it when the time comes).
final class DumpServer: Sendable {
    static let unclaimedAnswerSeconds: UInt64 = 30

    private let logger: Logger
    private let store: ReportStore
    private let builder: ReportBuilder
    private let images: ImageRegistry
    /// The environment's clock (the dump lane's deadlines are on it).
    private let clock: any MonotonicClock
    /// Takes the dump: every thread of the process looked at (`ProcessDump.take` on a real one).
    private let take: @Sendable () -> ProcessDump
    /// Reads every task (`hangwatch dump --tasks`); nil: not in this world.
    let tasks: MonitorWorld.TaskDumps?
    /// What the task dumps saw, kept for the next (how long each task was seen unchanged).
    private let sightings = Mutex(TaskSightings())
    /// Why no task is listed was logged (once: every answer says it too).
    private let saidUnavailable = Atomic<Bool>(false)
    /// Answers written and not yet known to be taken: path, and when written (µs).
    private let unclaimed = Mutex<[(path: String, writtenAt: UInt64)]>([])

    init(
        logger: Logger, store: ReportStore, builder: ReportBuilder, images: ImageRegistry, clock: any MonotonicClock,
        take: @escaping @Sendable () -> ProcessDump, tasks: MonitorWorld.TaskDumps? = nil
    ) {
        self.logger = logger
        self.store = store
        self.builder = builder
        self.images = images
        self.clock = clock
        self.take = take
        self.tasks = tasks
    }

    /// The file names of the answers to the request with `nonce`.
    static func answerFileName(nonce: UInt64) -> String { ".dump-\(nonce).json" }
    static func refusalFileName(nonce: UInt64) -> String { ".dump-\(nonce).refused" }

    /// Takes the dump the request asks for (`DumpKind`) and writes it.
    func serve(_ nonce: UInt64) {
        if DumpKind(nonce: nonce) == .tasks { return serveTasks(nonce) }
        let started = clock.microseconds()
        let dump = take()
        var dumpBuilder = builder
        dumpBuilder.source = .dump
        let report = dumpBuilder.build(dump: dump, id: "dump-\(nonce)", images: images.current)
        answer(nonce, with: { try report.encoded() }, what: "thread dump", count: ("hangwatch.threads", dump.threads.count), took: clock.microseconds() - started)
    }

    /// Writes the answer to the request with `nonce` (`encoded`'s bytes) and logs it: `what` was
    /// written, with `count` and how long the dump `took`; or that it was not, and why.
    private func answer(_ nonce: UInt64, with encoded: () throws -> Data, what: String, count: (key: String, value: Int), took: UInt64) {
        do {
            write(try encoded(), name: Self.answerFileName(nonce: nonce))
            logger.info(
                "\(what) written",
                metadata: [
                    "hangwatch.path": "\(store.directory)/\(Self.answerFileName(nonce: nonce))", "\(count.key)": "\(count.value)",
                    "hangwatch.took_us": "\(took)",
                ])
        } catch {
            logger.warning("\(what) not written", metadata: ["hangwatch.error": "\(error)"])
        }
    }

    /// Takes the task dump (with every thread: a running task's stack is its thread's) and writes
    /// it on one line (`encodedCompactly`).
    private func serveTasks(_ nonce: UInt64) {
        let started = clock.microseconds()
        let census = tasks?.take() ?? TaskCensus(layout: .failure(TaskLayoutProblem(reason: "task dumps are not answered here: no tasks listed")))
        let threads = take()
        var dumpBuilder = builder
        dumpBuilder.source = .tasks
        var report = sightings.withLock { sightings in
            dumpBuilder.build(tasks: census, threads: threads, sightings: &sightings, id: "tasks-\(nonce)", images: images.current)
        }
        let took = clock.microseconds() - started
        report.tasks?.scan.tookMs = Double(took) / 1000
        if let problem = report.tasks?.unavailable, !saidUnavailable.exchange(true, ordering: .relaxed) {
            logger.warning("task dump lists no task", metadata: ["hangwatch.reason": "\(problem)"])
        }
        answer(nonce, with: { [report] in try report.encodedCompactly() }, what: "task dump", count: ("hangwatch.tasks", report.tasks?.tasks.count ?? 0), took: took)
    }

    /// Reads the flight recorder of every watch in `watches` now and writes their windows (`source`
    /// `recent`): a watch without a recorder says why it has none, and the pool watch, run by the
    /// monitor `poolWatchOwner` when there is one, is listed last. On the watchdog's thread; the
    /// loops are not disturbed (their recorders are only read).
    func serveRecent(_ nonce: UInt64, watches: [WatchedSource], poolWatchOwner: ObjectIdentifier?) {
        let now = clock.microseconds()
        var sources = watches.map { $0.recent(nowMicroseconds: now, pid: builder.pid) }
        if let poolWatchOwner, let runner = watches.first(where: { $0.monitor == poolWatchOwner }) {
            sources.append(
                HangReport.Recent.Source(
                    source: ActivitySourceKind.concurrencyPool.rawValue, service: runner.service, thread: nil,
                    thresholdMs: ReportBuilder.milliseconds(Int64(runner.control.thresholdMicroseconds.load(ordering: .relaxed))),
                    noRecorder: WatchedSource.onlyRunLoops))
        }
        var dumpBuilder = builder
        dumpBuilder.source = .recent
        let report = dumpBuilder.build(recent: HangReport.Recent(sources: sources), id: "recent-\(nonce)", microseconds: now)
        answer(nonce, with: { try report.encoded() }, what: "recent-window dump", count: ("hangwatch.sources", sources.count), took: clock.microseconds() - now)
    }

    /// Says why the request with `nonce` gets no dump.
    func refuse(_ nonce: UInt64, reason: String) {
        logger.notice("thread dump refused", metadata: ["hangwatch.reason": "\(reason)"])
        write(Data((reason + "\n").utf8), name: Self.refusalFileName(nonce: nonce))
    }

    private func write(_ data: Data, name: String) {
        let path = store.directory + "/" + name
        do {
            try store.writeAtomically(data, to: path, name: name, mode: 0o600)
            unclaimed.withLock { $0.append((path, clock.microseconds())) }
        } catch {
            logger.warning("thread dump answer not written", metadata: ["hangwatch.path": "\(path)", "hangwatch.error": "\(error)"])
        }
    }

    /// Removes the answers nobody took in time, and says when the next one left expires (its
    /// clock's microseconds; nil: none is left). Cheap when there are none.
    @discardableResult
    func sweep() -> UInt64? {
        guard unclaimed.withLock({ !$0.isEmpty }) else { return nil }
        let now = clock.microseconds()
        let lifetime = Self.unclaimedAnswerSeconds * 1_000_000
        let (expired, next) = unclaimed.withLock { answers -> ([String], UInt64?) in
            let old = answers.filter { now &- $0.writtenAt >= lifetime }
            answers.removeAll { now &- $0.writtenAt >= lifetime }
            return (old.map(\.path), answers.map { $0.writtenAt + lifetime }.min())
        }
        for path in expired where unlink(path) == 0 {
            logger.notice("thread dump answer nobody took removed", metadata: ["hangwatch.path": "\(path)"])
        }
        return next
    }
}
