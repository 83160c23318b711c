import Foundation
@testable import HangWatch
import HangWatchReport
import Synchronization
import HangWatchTestSupport
import Testing

/// Faults at capture time, end to end: a monitored loop, a hang, the report. (docs/reliability.md,
/// cases 6, 7 and 10.)
@Suite(.serialized) struct MonitorFaultTests {
    let library: FaultLibrary

    init() throws {
        library = try FaultLibrary.shared.get()
    }

    /// Case 7: capturing never changes what the host code does. A signal would cut each of these
    /// waits short with EINTR (SA_RESTART restarts none of the timed ones); the monitor unwinds a
    /// thread blocked in a system call from outside, without a signal.
    @Test(arguments: FaultLibrary.WaitKind.allCases)
    func aHangInABlockingCallIsSampledWithoutCuttingItShort(_ kind: FaultLibrary.WaitKind) throws {
        let (directory, loop, monitor) = try startMonitoredLoop("wait\(kind.rawValue)") {
            $0.sampleInterval = .milliseconds(10)
        }
        defer { loop.stop() }
        let wait = library.wait
        let outcome = Mutex<(result: Int32, elapsedNs: Int64)>((-1, 0))
        loop.sync {
            var elapsed: Int64 = 0
            let result = wait(kind.rawValue, 700, &elapsed)
            outcome.withLock { $0 = (result, elapsed) }
        }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        let (result, elapsed) = outcome.withLock { $0 }
        #expect(result == 0, "\(kind): the wait failed with errno \(result)")
        #expect(elapsed >= 699_000_000, "\(kind): a 700 ms wait took \(Double(elapsed) / 1e6) ms")
        let report = try #require(reports.first)
        #expect(report.context.blockedIn == kind.syscallName, "\(kind): blocked in \(report.context.blockedIn ?? "nothing")")
        let inCall = report.samples.filter { $0.syscall == kind.syscallName }
        #expect(inCall.count >= 10, "\(kind): \(inCall.count) samples in the call")
        #expect(inCall.allSatisfy { $0.method != "signal" })
        #expect(report.heaviestStackContains("hangwatch_fault_wait"), "\(kind): \(report.heaviestSymbols)")
    }

    /// Case 6: a library replaces HangWatch's handler after the monitor started, without passing
    /// capture requests on. The first capture times out; the monitor takes the signal back,
    /// chaining to the newcomer, so later captures work and the newcomer still gets its signals.
    @Test func aHandlerThatReplacesHangWatchsIsChainedToOnceTheMonitorTakesTheSignalBack() throws {
        let signal = CaptureSignal.realtimeRange.lowerBound + 11
        let (directory, loop, monitor) = try startMonitoredLoop {
            $0.captureSignal = signal
            $0.sampleInterval = .milliseconds(20)
            // No flight recorder, so no near miss: the first capture, the one that times out, is
            // then the hang's (a near miss's, half-way, would be the hang's piece's, not reported).
            $0.leadUpWindow = .zero
        }
        defer { loop.stop() }
        #expect(library.installAfter(signal, 0) == 0)
        #expect(!UnsafeCaptureBridge.handlerIsCurrent(signal: signal))
        loop.sync { _ = spinInTestHang(milliseconds: 900) }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        let report = try #require(reports.first)
        let timeouts = report.capture.errors.first { $0.kind == "timeout" }?.count ?? 0
        #expect(timeouts >= 1 && timeouts <= 2, "\(report.capture.errors)")
        #expect(report.samples.filter { $0.method == "signal" && $0.stack != nil }.count >= 10)
        #expect(report.heaviestStackContains("spinInTestHang"), "\(report.heaviestSymbols)")
        #expect(UnsafeCaptureBridge.handlerIsCurrent(signal: signal))
        // The newcomer's own signals still reach it, through HangWatch's handler.
        #expect(library.lateHandlerGetsItsOwnSignal(signal))
    }

    /// Case 10: four monitored loops hung at once. Captures are serialized process-wide (one
    /// thread paused at a time): every hang is reported with its own stacks and no capture fails
    /// for being busy.
    @Test func manyLoopsHungAtOnceAreEachCapturedOneAtATime() throws {
        let monitored = try (0..<4).map { index in
            try startMonitoredLoop("manyLoops\(index)") { $0.sampleInterval = .milliseconds(5) }
        }
        defer { monitored.forEach { $0.loop.stop() } }
        let group = DispatchGroup()
        for entry in monitored {
            group.enter()
            entry.loop.perform {
                _ = spinInTestHang(milliseconds: 900)
                group.leave()
            }
        }
        group.wait()
        for (index, entry) in monitored.enumerated() {
            let reports = entry.directory.waitForFinished(1)
            entry.monitor.stop()
            let report = try #require(reports.first, "loop \(index) has no report")
            #expect(reports.count == 1)
            #expect(report.capture.errors.allSatisfy { $0.kind != "capture busy" }, "loop \(index): \(report.capture.errors)")
            // Four spinning loops on this machine's CPUs, sampled every 5 ms for 900 ms: each is
            // captured many times (about 40 on two idle CPUs; fewer beside other work). Ten say
            // the captures were taken in turn, never refused as busy.
            #expect(report.samples.filter { $0.method == "signal" && $0.stack != nil }.count >= 10, "loop \(index)")
            #expect(report.heaviestStackContains("spinInTestHang"), "loop \(index): \(report.heaviestSymbols)")
        }
    }
}
