import Foundation
import HangWatchReport
import HangWatchSymbolication
import HangWatchTestSupport
import Testing

/// A service (release build, `hangwatch-waits`) whose main thread waits on an object another
/// thread or process holds, one kind per run: each report names what it waited for, and for an
/// owned object the holder's tid (or pid) and name and the holder's own stack with the function
/// that holds it; the lock-order deadlock is `deadlocked` with both threads in its first,
/// provisional report; the semaphore names no holder; a pool job waiting for a lock held by a
/// plain thread names that thread.
@Suite(.serialized) struct WaitsForTests {
    struct Run {
        var announced: [String: Int32]
        var reports: [HangReport]
    }

    static func binary() throws -> String {
        let path = BuiltExecutable.releasePath("hangwatch-waits")
        try #require(
            FileManager.default.isExecutableFile(atPath: path), "build it first: \(BuiltExecutable.releaseBuildCommand("hangwatch-waits")) (\(path))")
        return path
    }

    /// Runs one case to its end (or, for a deadlock, until its first report is there) and reads its
    /// reports, with names.
    static func run(_ waitCase: String, untilReport: Bool = false) throws -> Run {
        let directory = ReportDirectory("waits-\(waitCase)")
        let service = try RunningExecutable(try binary(), [waitCase, "--reports", directory.path])
        if untilReport {
            _ = Eventually.holds(timeout: 20) { !directory.reports().isEmpty }
            service.signal(SIGKILL)
        }
        let result = service.finish(within: 60)
        #expect(untilReport || result.status == 0, "\(waitCase): exit \(result.status): \(result.errors.suffix(2000))")
        let line = result.output.split(separator: "\n").first { $0.hasPrefix("{") } ?? "{}"
        let announced = (try? JSONDecoder().decode([String: Int32].self, from: Data(line.utf8))) ?? [:]
        let symbolicator = Symbolicator()
        let reports = directory.reports().map { report -> HangReport in
            var named = report
            symbolicator.symbolicate(&named)
            return named
        }
        return Run(announced: announced, reports: reports)
    }

    static func symbols(_ report: HangReport, _ stack: Int?) -> [String] {
        guard let stack = stack.flatMap(report.stack(at:)) else { return [] }
        return report.frames(of: stack).map { $0.symbol ?? $0.address }
    }

    /// The main thread's report (the run loop's), whose waits are the case's.
    static func mainReport(_ run: Run) throws -> HangReport {
        try #require(run.reports.first { $0.source == "runloop" }, "no run-loop report: \(run.reports.map(\.source))")
    }

    @Test(arguments: [
        ("mutex", "mutex", "refreshCache"), ("swift-mutex", "swift-mutex", "refreshCache"), ("rwlock", "rwlock", "refreshCache"),
        ("join", "thread-join", "crunchNumbers"),
        // Timed forms: the same kind and the same holder (glibc's timed lock tail-calls the
        // function that waits, which no symbol names).
        ("timed-mutex", "mutex", "refreshCache"), ("nslock-before", "mutex", "refreshCache"),
        ("timed-rwlock", "rwlock", "refreshCache"),
        // A condition wait, woken, taking its mutex again: a wait for the mutex, not the condition.
        ("condition-mutex", "mutex", "refreshCache"),
    ])
    func aThreadHoldingWhatTheMainThreadWaitsForIsNamedWithItsStack(_ waitCase: String, _ kind: String, _ holding: String) throws {
        let run = try Self.run(waitCase)
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "\(waitCase): no waitsFor in \(report.id)")
        #expect(waits.kind == kind)
        #expect(waits.owner == "held", "\(waits)")
        let holder = try #require(waits.holder)
        #expect(holder.tid != nil && holder.tid == run.announced["holderTid"], "\(holder) vs \(run.announced)")
        #expect(holder.name == (waitCase == "join" ? "cruncher" : "cache-refresh"))
        #expect(holder.verdict == "blocked" && holder.syscall == "clock_nanosleep", "\(holder)")
        #expect(Self.symbols(report, holder.stack).contains { $0.contains(holding) }, "\(Self.symbols(report, holder.stack))")
        // The waiter's own stack shows where it waited.
        #expect(report.heaviestStack?.frames.contains { $0.symbol?.contains("waitFor") == true } == true)
    }

    /// A holder that computes under the lock: captured by signal once it is prepared (a plain
    /// thread by the capture signal, a libdispatch worker by SIGPROF), its stack names the function
    /// it computes in, and the report counts the looks that could not take it.
    @Test(arguments: [
        ("computing-mutex", "mutex", "eval-ledger"), ("computing-swift-mutex", "swift-mutex", "eval-ledger"),
        ("computing-worker-mutex", "mutex", "-qos.overcommit"),
    ])
    func aHolderThatComputesIsNamedWithTheStackItComputesIn(_ waitCase: String, _ kind: String, _ name: String) throws {
        let run = try Self.run(waitCase)
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "\(waitCase): no waitsFor in \(report.id)")
        #expect(waits.kind == kind && waits.owner == "held", "\(waits)")
        let holder = try #require(waits.holder)
        #expect(holder.tid != nil && holder.tid == run.announced["holderTid"], "\(holder) vs \(run.announced)")
        #expect(holder.name == name && holder.verdict == "computing", "\(holder)")
        #expect(Self.symbols(report, holder.stack).contains { $0.contains("computeLedger") }, "\(Self.symbols(report, holder.stack)): \(holder)")
        // One look with each sample of the 1.5 s hold: the stack taken at nearly every one.
        let looks = try #require(holder.looks), missed = try #require(holder.looksWithoutStack)
        #expect(looks >= 10 && missed * 10 <= looks, "\(missed) of \(looks) looks without the holder's stack: \(holder.stackError ?? "")")
    }

    @Test(arguments: ["child", "file-lock"])
    func anotherProcessHoldingItIsNamedByPid(_ waitCase: String) throws {
        let run = try Self.run(waitCase)
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "\(waitCase): no waitsFor")
        #expect(waits.kind == (waitCase == "child" ? "child-process" : "file-lock"))
        let holder = try #require(waits.holder, "\(waits)")
        #expect(holder.pid != nil && holder.pid == run.announced["holderPid"], "\(holder) vs \(run.announced)")
        #expect(holder.name == (waitCase == "child" ? "sleep" : "flock"))
        #expect(holder.stack == nil && holder.stackError?.contains("another process") == true)
        if waitCase == "file-lock" { #expect(waits.file?.split(separator: ":").count == 3) }
    }

    @Test func aSemaphoreNamesNoHolder() throws {
        let report = try Self.mainReport(try Self.run("semaphore"))
        let waits = try #require(report.waitsFor)
        #expect(waits.owner == "none" && waits.holder == nil, "\(waits)")
        #expect(waits.kind == "dispatch" && waits.reason?.contains("no owner") == true)
    }

    /// Reported while it lasts: the first, provisional report says deadlocked, with both threads
    /// and both stacks, each at the lock it waits for.
    @Test(arguments: ["deadlock", "timed-deadlock"])
    func aLockOrderDeadlockIsCalledOneInItsFirstReport(_ waitCase: String) throws {
        let run = try Self.run(waitCase, untilReport: true)
        let report = try Self.mainReport(run)
        #expect(report.outcome == .ongoing)
        #expect(report.context.verdict == .deadlocked)
        let waits = try #require(report.waitsFor)
        let main = try #require(run.announced["waiterTid"]), peer = try #require(run.announced["holderTid"])
        #expect(waits.deadlock == [main, peer], "\(waits.deadlock ?? [])")
        #expect(waits.holder?.tid == peer && waits.holder?.name == "deadlock-peer")
        #expect(Self.symbols(report, waits.holder?.stack).contains { $0.contains("takeSecondLock") })
        let link = try #require(waits.chain?.first)
        #expect(link.tid == peer && link.kind == "mutex" && link.holder?.tid == main)
        #expect(Self.symbols(report, link.holder?.stack).contains { $0.contains("takeSecondLock") })
    }

    @Test func aPoolJobWaitingForALockHeldByAPlainThreadNamesThatThread() throws {
        let run = try Self.run("pool-mutex")
        let job = try #require(run.reports.first { $0.source == "pool-job" }, "no pool-job report: \(run.reports.map(\.source))")
        let waits = try #require(job.waitsFor)
        #expect(waits.kind == "mutex" && waits.holder?.tid == run.announced["holderTid"] && waits.holder?.name == "cache-refresh", "\(waits)")
        #expect(Self.symbols(job, waits.holder?.stack).contains { $0.contains("refreshCache") })
    }

    /// A starved pool's report says, thread by thread, what each waits for and who holds it: the
    /// wait-for graph of the pool.
    @Test func aStarvedPoolsThreadsEachNameTheHolderTheyWaitFor() throws {
        let run = try Self.run("pool-starved")
        let pool = try #require(run.reports.first { $0.source == "concurrency-pool" }, "no concurrency-pool report: \(run.reports.map(\.source))")
        let held = (pool.threads ?? []).filter { $0.verdict == "blocked" }
        #expect(!held.isEmpty, "\(pool.threads ?? [])")
        for thread in held {
            let waits = try #require(thread.waitsFor, "thread \(thread.tid) names no wait")
            #expect(waits.kind == "mutex" && waits.holder?.tid == run.announced["holderTid"] && waits.holder?.name == "cache-refresh", "\(waits)")
        }
        // The holder's stack is in the report once, whatever the number of waiters.
        let stacks = Set(held.compactMap { $0.waitsFor?.holder?.stack })
        #expect(stacks.count == 1)
        #expect(stacks.first.map { Self.symbols(pool, $0).contains { $0.contains("refreshCache") } } == true)
    }

    // MARK: I/O

    /// A read of a TCP connection (127.0.0.1) whose other end a `sleep` child holds: both
    /// addresses, the state and queues, and that process named as the holder.
    @Test func aSocketReadNamesBothAddressesAndTheProcessAtTheOtherEnd() throws {
        let run = try Self.run("tcp-process")
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "no waitsFor")
        #expect(waits.kind == "socket" && waits.syscall == "read" && waits.owner == "held", "\(waits)")
        let endpoint = try #require(waits.endpoints?.first)
        #expect(waits.endpoints?.count == 1)
        #expect(endpoint.type == "tcp" && endpoint.state == "ESTABLISHED" && endpoint.receiveQueue == 0, "\(endpoint)")
        #expect(endpoint.local?.hasPrefix("127.0.0.1:") == true && endpoint.remote?.hasPrefix("127.0.0.1:") == true, "\(endpoint)")
        #expect(endpoint.local != endpoint.remote)
        let pid = try #require(run.announced["holderPid"])
        #expect(endpoint.peers?.map(\.pid) == [pid], "\(endpoint.peers ?? [])")
        #expect(waits.holder?.pid == pid && waits.holder?.name == "sleep", "\(waits.holder.map { "\($0)" } ?? "no holder")")
        #expect(Self.symbols(report, report.heaviestStack?.stack).contains { $0.contains("waitForReply") })
    }

    /// A UNIX socket pair whose other end a thread of this process reads too (each waits for the
    /// other to speak): that thread is the holder, with its stack.
    @Test func aUnixSocketWhoseOtherEndAThreadOfThisProcessReadsNamesThatThreadWithItsStack() throws {
        let run = try Self.run("unix-thread")
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "no waitsFor")
        #expect(waits.kind == "socket" && waits.endpoints?.first?.type == "unix", "\(waits)")
        let tid = try #require(run.announced["holderTid"])
        #expect(waits.owner == "held" && waits.holder?.tid == tid && waits.holder?.name == "cache-refresh", "\(waits)")
        #expect(waits.holder?.syscall == "read" && waits.holder?.verdict == "blocked")
        #expect(Self.symbols(report, waits.holder?.stack).contains { $0.contains("awaitRequest") }, "\(Self.symbols(report, waits.holder?.stack))")
        #expect(waits.endpoints?.first?.peers?.first?.tid == tid)
    }

    /// A read of a pipe: the process holding the write end.
    @Test func aPipeReadNamesTheProcessHoldingTheWriteEnd() throws {
        let run = try Self.run("pipe")
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "no waitsFor")
        let pid = try #require(run.announced["holderPid"])
        #expect(waits.kind == "pipe" && waits.owner == "held" && waits.holder?.pid == pid && waits.holder?.name == "sleep", "\(waits)")
        #expect(waits.endpoints?.first?.peers?.map(\.pid) == [pid])
    }

    /// A `poll` of a pipe and a socket: both named, with what it waits for on each; no single holder.
    @Test func aPollNamesEachDescriptorItWaitsOn() throws {
        let run = try Self.run("poll")
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "no waitsFor")
        #expect(waits.kind == "poll" && waits.syscall == "poll" && waits.descriptors == 2, "\(waits)")
        #expect(waits.owner == "unknown" && waits.holder == nil)
        let endpoints = waits.endpoints ?? []
        #expect(endpoints.map(\.type) == ["pipe", "tcp"] && endpoints.allSatisfy { $0.events == "in" }, "\(endpoints)")
        let pid = try #require(run.announced["holderPid"])
        #expect(endpoints.allSatisfy { $0.peers?.map(\.pid) == [pid] }, "\(endpoints)")
    }

    /// A `connect` to a listener whose accept queue is full: its SYN dropped, the socket waits in
    /// SYN-SENT, with both addresses (the remote one is the call's own: a socket still connecting
    /// has no peer name); the other end is the listener, held by this very process.
    @Test func aConnectStillWaitingForTheOtherEndIsInSYNSENT() throws {
        let run = try Self.run("syn-sent")
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "no waitsFor")
        #expect(waits.kind == "socket" && waits.syscall == "connect", "\(waits)")
        let endpoint = try #require(waits.endpoints?.first, "\(waits)")
        let port = try #require(run.announced["port"])
        #expect(endpoint.type == "tcp" && endpoint.state == "SYN-SENT", "\(endpoint)")
        #expect(endpoint.remote == "127.0.0.1:\(port)" && endpoint.local?.hasPrefix("127.0.0.1:") == true, "\(endpoint)")
        let pid = try #require(run.announced["waiterTid"])
        // The other end is the listener: this very process, and nothing else listens there.
        let peers = try #require(endpoint.peers, "the listener at the other end is not named: \(waits)")
        #expect(!peers.isEmpty && peers.allSatisfy { $0.pid == pid }, "only this process listens there: \(waits)")
        #expect(Self.symbols(report, report.heaviestStack?.stack).contains { $0.contains("connectToTheFullQueue") })
    }

    /// A read of a UNIX socket connected to a daemon's listening path: the path, and the process
    /// holding the accepted end.
    @Test func aUnixSocketReadNamesThePathAndTheProcessAtTheOtherEnd() throws {
        let run = try Self.run("unix-process")
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "no waitsFor")
        #expect(waits.kind == "socket" && waits.syscall == "read" && waits.owner == "held", "\(waits)")
        let endpoint = try #require(waits.endpoints?.first, "\(waits)")
        let pid = try #require(run.announced["holderPid"]), waiter = try #require(run.announced["waiterTid"])
        let path = FileManager.default.temporaryDirectory.path + "/hangwatch-waits-\(waiter).sock"
        #expect(endpoint.type == "unix" && endpoint.remote == path, "\(endpoint)")
        #expect(endpoint.peers?.map(\.pid) == [pid] && waits.holder?.pid == pid && waits.holder?.name == "sleep", "\(waits)")
    }

    /// A sleep: no owner, the time asked for, and what was left (at most the time asked, less
    /// the time it was seen sleeping).
    @Test func aSleepSaysTheTimeAskedForAndWhatWasLeft() throws {
        let run = try Self.run("sleep")
        let report = try Self.mainReport(run)
        let waits = try #require(report.waitsFor, "no waitsFor")
        #expect(waits.kind == "sleep" && waits.owner == "none" && waits.holder == nil, "\(waits)")
        let sleep = try #require(waits.sleep)
        #expect(sleep.requestedMs == 1500 && !sleep.absolute && sleep.clock == "realtime", "\(sleep)")
        let left = try #require(sleep.leftMs)
        // Seen sleeping from about a threshold (250 ms) in to near its end.
        #expect(left > 0 && left < 1500 - 500, "\(left) ms left")
    }
}
