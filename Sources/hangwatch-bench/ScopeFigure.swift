import Foundation
import HangWatch

/// What a scope costs: a thread runs `iterations` work items of about 0.3 µs, bare and
/// each inside `enterWork()` / `leaveWork()`, alternating in every round; median of per-round ratios.
struct ScopeFigure {
    var iterations: Int
    var rounds: Int

    struct Outcome {
        var noneNanoseconds: Double
        var scopeNanoseconds: Double
        var ratio: Double
    }

    @inline(never)
    static func workItem(_ seed: UInt64) -> UInt64 {
        var value = seed
        for step in 0..<300 { value = value &* 6364136223846793005 &+ UInt64(step) }
        return value
    }

    func measure() throws -> Outcome {
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid())-scopes"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let monitor = try HangMonitor(
            configuration: HangMonitor.Configuration(serviceName: "bench", threshold: .seconds(10), reportDirectory: directory))
        defer { monitor.stop() }
        let result = Mutex<Outcome?>(nil)
        let failure = Mutex<(any Error)?>(nil)
        let iterations = self.iterations, rounds = self.rounds
        let thread = Thread {
            do {
                try monitor.startWatchingScopes()
            } catch {
                failure.withLock { $0 = error }
                return
            }
            var sink: UInt64 = 0
            func timed(_ scoped: Bool) -> Double {
                let start = DispatchTime.now().uptimeNanoseconds
                for index in 0..<iterations {
                    if scoped { monitor.enterWork() }
                    sink &+= Self.workItem(UInt64(index))
                    if scoped { monitor.leaveWork() }
                }
                return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(iterations)
            }
            _ = timed(false)
            _ = timed(true)
            var none: [Double] = [], scoped: [Double] = [], ratios: [Double] = []
            for round in 0..<rounds {
                let first = round % 2 == 0
                let a = timed(!first), b = timed(first)
                let (bare, withScopes) = first ? (a, b) : (b, a)
                none.append(bare)
                scoped.append(withScopes)
                ratios.append(withScopes / bare)
            }
            if sink == 42 { print("") }
            result.withLock {
                $0 = Outcome(noneNanoseconds: Statistics.median(none), scopeNanoseconds: Statistics.median(scoped), ratio: Statistics.median(ratios))
            }
        }
        thread.start()
        while result.withLock({ $0 == nil }) && failure.withLock({ $0 == nil }) { usleep(10_000) }
        if let error = failure.withLock({ $0 }) { throw error }
        return result.withLock { $0! }
    }
}

import Synchronization
