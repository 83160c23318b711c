import Foundation
import HangWatch
import Synchronization

/// How often a capture by signal cuts a blocking call short. A signal that lands while a thread is
/// in a timed wait (`nanosleep`, `poll`, `epoll_wait`, a timed futex) ends the wait with EINTR. The
/// watchdog signals only a thread it read as running, but the thread may enter such a call between
/// that read and the signal, or be inside one's kernel entry already (`running` covers that). The
/// victim here does what makes that likely: a burst of computing, then a 200 us sleep, again and
/// again, while a watcher looks at it as fast as it can, the way the watchdog does (one sampler, the
/// sample before kept). The victim counts its own sleeps that returned EINTR; the watcher counts the
/// captures by signal, and the ones the handler reported as having cut a call short.
///
/// Measured side by side, in alternating rounds, for each `SignalGuard`.
struct CutShortFigure {
    var seconds: Double
    var rounds: Int
    /// The victim's bursts of computing between its sleeps, in microseconds (cycled through).
    var bursts: ClosedRange<Int>
    /// Another thread spins on the watcher's CPU: the watcher can lose its CPU between its look and
    /// its signal, as on a busy machine.
    var contended: Bool

    struct Tally {
        var looks = 0
        var signalCaptures = 0
        var cutShort = 0
        var flagged = 0

        var seconds = 0.0

        var perSecond: Double { seconds == 0 ? .nan : Double(cutShort) / seconds }
        var perThousandCaptures: Double { signalCaptures == 0 ? 0 : Double(cutShort) * 1000 / Double(signalCaptures) }
    }

    func measure() throws -> [SignalGuard: Tally] {
        let signal = CaptureProbe.defaultSignal
        try CaptureProbe.install(signal: signal)
        let stop = Atomic<Bool>(false)
        let cutShort = Atomic<Int>(0)
        let ready = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var target: CaptureProbe.Target?
        let bursts = bursts
        let step = max(1, (bursts.upperBound - bursts.lowerBound) / 13)
        let victim = Thread {
            target = CaptureProbe.attachCurrentThread(signal: signal)
            ProcessThreads.pin(target!.tid, to: 0)
            ready.signal()
            var burst = bursts.lowerBound
            while !stop.load(ordering: .relaxed) {
                spin(microseconds: burst)
                burst = burst + step > bursts.upperBound ? bursts.lowerBound : burst + step
                var pause = timespec(tv_sec: 0, tv_nsec: 200_000)
                if clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, nil) == EINTR {
                    cutShort.add(1, ordering: .relaxed)
                }
            }
        }
        victim.start()
        ready.wait()
        defer { stop.store(true, ordering: .relaxed) }
        let watcher = ProcessThreads.currentThreadID()
        ProcessThreads.pin(watcher, to: 1)
        defer { ProcessThreads.pin(watcher, to: nil) }
        let busy = contended ? BusyThread(cpu: 1) : nil
        defer { busy?.stop() }

        var tallies: [SignalGuard: Tally] = [:]
        for _ in 0..<rounds {
            for mode in SignalGuard.allCases {
                let looker = CaptureProbe.Looker(target!, signal: signal, signalGuard: mode)
                var tally = tallies[mode] ?? Tally()
                let before = cutShort.load(ordering: .relaxed)
                let end = Date().addingTimeInterval(seconds)
                while Date() < end {
                    let sample = looker.look()
                    tally.looks += 1
                    if sample.method == "signal" { tally.signalCaptures += 1 }
                    if sample.cutCallShort { tally.flagged += 1 }
                }
                // Let an interrupted sleep be counted before the round's count is read.
                usleep(2_000)
                tally.cutShort += cutShort.load(ordering: .relaxed) - before
                tally.seconds += seconds
                tallies[mode] = tally
            }
        }
        return tallies
    }

    /// What the guard costs a thread that computes without a pause while another thread shares its
    /// CPU (preempting it every few milliseconds), and the watcher too: the looks that got no stack
    /// because the guard did not hold, twice in a row (it must not: the thread never sleeps).
    func measureComputing() throws -> (looks: Int, signalCaptures: Int, noStack: Int) {
        let signal = CaptureProbe.defaultSignal
        try CaptureProbe.install(signal: signal)
        let stop = Atomic<Bool>(false)
        let ready = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var target: CaptureProbe.Target?
        let victim = Thread {
            target = CaptureProbe.attachCurrentThread(signal: signal)
            ProcessThreads.pin(target!.tid, to: 0)
            ready.signal()
            while !stop.load(ordering: .relaxed) { spin(microseconds: 1000) }
        }
        victim.start()
        ready.wait()
        defer { stop.store(true, ordering: .relaxed) }
        let busy = BusyThread(cpu: 0)
        defer { busy.stop() }
        let watcher = ProcessThreads.currentThreadID()
        ProcessThreads.pin(watcher, to: 0)
        defer { ProcessThreads.pin(watcher, to: nil) }
        let looker = CaptureProbe.Looker(target!, signal: signal)
        var outcome = (looks: 0, signalCaptures: 0, noStack: 0)
        let end = Date().addingTimeInterval(seconds * Double(rounds))
        while Date() < end {
            let sample = looker.look()
            outcome.looks += 1
            if sample.method == "signal" { outcome.signalCaptures += 1 }
            if sample.failure != nil { outcome.noStack += 1 }
            usleep(1_000)
        }
        return outcome
    }

    private final class BusyThread: @unchecked Sendable {
        private let running = Atomic<Bool>(true)

        init(cpu: Int) {
            let started = DispatchSemaphore(value: 0)
            Thread { [self] in
                ProcessThreads.pin(ProcessThreads.currentThreadID(), to: cpu)
                started.signal()
                while running.load(ordering: .relaxed) {}
            }.start()
            started.wait()
        }

        func stop() { running.store(false, ordering: .relaxed) }
    }
}

private func spin(microseconds: Int) {
    var start = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    let end = Int64(start.tv_sec) * 1_000_000_000 + Int64(start.tv_nsec) + Int64(microseconds) * 1000
    var now = start
    repeat {
        clock_gettime(CLOCK_MONOTONIC, &now)
    } while Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) < end
}
