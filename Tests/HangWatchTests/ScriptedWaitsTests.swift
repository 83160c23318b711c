import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

/// What a blocked hang waits on, through the monitor's own lane and writer on scripted time: the
/// hang lane asks the wait inspector at each sample of the thread blocked in a call (never at one
/// that computes), and the report names what the looks found. The inspector's looks are scripted
/// (`ScriptedWaitInspector`); `LinuxWaitInspector`'s reading of real objects has its own tests.
@Suite struct ScriptedWaitsTests {
    static let mutex = WaitObject.mutex(address: 0x7f00_0040)

    /// A monitor whose loop is busy from 100 ms for 600 ms (detected at about 350 ms): computing
    /// until 500 ms, then blocked on the mutex; `waits` looks at it.
    static func blockedHang(_ waits: ScriptedWaitInspector) -> WatchdogHarness {
        let h = WatchdogHarness(waits: waits)
        h.busy(from: 100, for: 600)
        let blockedFrom = h.t(500)
        h.sampler.next = { now, _ in now >= blockedFrom ? ScriptedWaitInspector.blockedOnMutex() : ScriptedSampler.computing() }
        return h
    }

    static func held(by tid: Int32, name: String, at now: UInt64, cycle: [Int32]? = nil) -> WaitObservation {
        var observation = WaitObservation(
            microseconds: now, object: mutex, syscall: Syscalls.futex, file: nil, owner: .thread(tid),
            holder: HolderLook(owner: .thread(tid), name: name, state: "R"))
        observation.cycle = cycle
        return observation
    }

    @Test func theLaneAsksAtEveryBlockedSampleAndTheReportNamesEachHolder() throws {
        let waits = ScriptedWaitInspector()
        let h = Self.blockedHang(waits)
        // Thread 21 holds it until 600 ms, thread 22 after.
        let handOver = h.t(600)
        waits.next = { sample in
            let early = sample.microseconds < handOver
            return Self.held(by: early ? 21 : 22, name: early ? "worker-a" : "worker-b", at: sample.microseconds)
        }
        h.run()
        h.writer.flush()

        let recording = try #require(h.hangs.first?.recording)
        let blocked = recording.samples.filter { $0.blockedKey != nil }
        #expect(blocked.count >= 3 && blocked.count < recording.samples.count, "\(recording.samples.map(\.microseconds))")
        // One look per blocked sample, at its time, of the monitored thread; none at the others.
        #expect(waits.asked.map(\.microseconds) == blocked.map(\.microseconds))
        #expect(waits.asked.allSatisfy { $0.tid == MonitoredThread.scripted.tid && $0.signalAllowed })

        let report = try #require(ReportDirectory(path: h.directory.path).reports().first)
        let waitsFor = try #require(report.waitsFor)
        #expect(waitsFor.kind == "mutex" && waitsFor.owner == "held", "\(waitsFor)")
        #expect(waitsFor.holder?.tid == 22 && waitsFor.holder?.name == "worker-b")
        #expect(waitsFor.holders?.map(\.tid) == [21, 22], "\(String(describing: waitsFor.holders))")
        #expect(waitsFor.deadlock == nil && report.context.verdict != .deadlocked)
    }

    /// A debugger attached (the process snapshot's tracer): no look may signal a holder.
    @Test func withADebuggerAttachedNoLookMaySignalAHolder() throws {
        let waits = ScriptedWaitInspector()
        let h = Self.blockedHang(waits)
        h.environment.snapshot.tracerPID = 999
        waits.next = { sample in Self.held(by: 21, name: "worker-a", at: sample.microseconds) }
        h.run()
        h.writer.flush()
        #expect(!waits.asked.isEmpty)
        #expect(waits.asked.allSatisfy { !$0.signalAllowed })
    }

    /// A cycle the looks proved (the observation carries it): the report calls the deadlock, with
    /// its threads.
    @Test func aProvenCycleIsReportedAsADeadlock() throws {
        let waits = ScriptedWaitInspector()
        let h = Self.blockedHang(waits)
        let tid = MonitoredThread.scripted.tid
        waits.next = { sample in Self.held(by: 21, name: "worker-a", at: sample.microseconds, cycle: [tid, 21]) }
        h.run()
        h.writer.flush()
        let report = try #require(ReportDirectory(path: h.directory.path).reports().first)
        #expect(report.waitsFor?.deadlock == [tid, 21])
        #expect(report.context.verdict == .deadlocked)
    }
}
