import Foundation
import HangWatch
import Synchronization

/// What `HangMonitor.withLabels` costs a request path: calls with a two-label dictionary (built
/// once, as a middleware's would be per request) around a trivial body, against the same body
/// called bare, alternating in every round; the median of the rounds' differences per call, in
/// the thread's CPU time (a busy machine preempts the loop: wall time would count that).
/// Synchronous (on a plain thread), nested two deep, and `async` (in a task, the body awaited
/// without suspending). Allocations per call: valgrind's memcheck in a child (`child`).
struct LabelsFigure {
    var calls: Int
    var rounds: Int

    struct Outcome {
        /// Nanoseconds added per call (entered and left).
        var sync: Double
        /// Per call of the outer of two nested ones (both levels).
        var nested: Double
        var async: Double
        /// The bare body, per call (what the differences are over).
        var bareSync: Double
        var bareAsync: Double
        /// Reference: an empty async function that takes the body as a closure (what any
        /// `with…{ await … }` API costs before it does anything).
        var emptyWrapper: Double = .nan
        /// Reference: the standard library's `TaskLocal.withValue` with the same dictionary.
        var taskLocal: Double = .nan
    }

    static let labels = ["route": "GET /checkout", "tenant": "acme"]
    static let inner = ["request": "42"]

    @inline(never)
    static func step(_ value: Int) -> Int { value &* 31 &+ 7 }

    @inline(never)
    static func stepAsync(_ value: Int) async -> Int { value &* 31 &+ 7 }

    @inline(never)
    static func labelled(_ labels: [String: String], _ value: Int) -> Int {
        HangMonitor.withLabels(labels) { step(value) }
    }

    @inline(never)
    static func nestedLabelled(_ labels: [String: String], _ value: Int) -> Int {
        HangMonitor.withLabels(labels) { HangMonitor.withLabels(inner) { step(value) } }
    }

    @inline(never)
    static func labelledAsync(_ labels: [String: String], _ value: Int) async -> Int {
        await HangMonitor.withLabels(labels) { await stepAsync(value) }
    }

    @TaskLocal static var local: [String: String] = [:]

    @inline(never)
    static func taskLocalAsync(_ labels: [String: String], _ value: Int) async -> Int {
        await $local.withValue(labels) { await stepAsync(value) }
    }

    /// The shape of `withLabels`'s async form, doing nothing.
    @inline(__always)
    static func passThrough<V>(isolation: isolated (any Actor)? = #isolation, _ body: () async -> V) async -> V {
        defer { blackHole(1) }
        return await body()
    }

    @inline(never)
    static func wrappedAsync(_ value: Int) async -> Int {
        await passThrough { await stepAsync(value) }
    }

    /// The calling thread's CPU time, ns: what a loop cost, whatever else the machine ran (a
    /// preempted loop's wall time counts other processes' time as its own).
    static func threadCPUNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// CPU nanoseconds per call of `body` over `calls` calls.
    static func time(_ calls: Int, _ body: (Int) -> Int) -> Double {
        var sink = 0
        let start = threadCPUNanoseconds()
        for index in 0..<calls { sink &+= body(index) }
        let elapsed = threadCPUNanoseconds() - start
        blackHole(UInt64(bitPattern: Int64(sink)))
        return Double(elapsed) / Double(calls)
    }

    /// The same for an async body that never suspends (the loop stays on one thread, whose CPU
    /// time it reads); nil when it did move (then the thread's time is not the loop's).
    static func timeAsync(_ calls: Int, _ body: (Int) async -> Int) async -> Double? {
        var sink = 0
        let thread = pthread_self()
        let start = threadCPUNanoseconds()
        for index in 0..<calls { sink &+= await body(index) }
        let elapsed = threadCPUNanoseconds() - start
        blackHole(UInt64(bitPattern: Int64(sink)))
        return pthread_equal(thread, pthread_self()) != 0 ? Double(elapsed) / Double(calls) : nil
    }

    func measure() -> Outcome {
        let calls = self.calls, rounds = self.rounds
        let labels = Self.labels
        let result = Mutex<Outcome?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            var sync: [Double] = [], nested: [Double] = [], bare: [Double] = []
            _ = Self.time(calls, { Self.labelled(labels, $0) })
            for _ in 0..<rounds {
                let plain = Self.time(calls, Self.step)
                sync.append(Self.time(calls) { Self.labelled(labels, $0) } - plain)
                nested.append(Self.time(calls) { Self.nestedLabelled(labels, $0) } - plain)
                bare.append(plain)
            }
            result.withLock {
                $0 = Outcome(sync: Statistics.median(sync), nested: Statistics.median(nested), async: .nan, bareSync: Statistics.median(bare), bareAsync: .nan)
            }
            done.signal()
        }.start()
        done.wait()
        Task.detached {
            var async: [Double] = [], bare: [Double] = [], wrapper: [Double] = [], local: [Double] = []
            _ = await Self.timeAsync(calls) { await Self.labelledAsync(labels, $0) }
            for _ in 0..<rounds {
                guard let plain = await Self.timeAsync(calls, { await Self.stepAsync($0) }),
                    let labelled = await Self.timeAsync(calls, { await Self.labelledAsync(labels, $0) }),
                    let wrapped = await Self.timeAsync(calls, { await Self.wrappedAsync($0) }),
                    let taskLocal = await Self.timeAsync(calls, { await Self.taskLocalAsync(labels, $0) })
                else { continue }
                async.append(labelled - plain)
                bare.append(plain)
                wrapper.append(wrapped - plain)
                local.append(taskLocal - plain)
            }
            let medians = (Statistics.median(async), Statistics.median(bare), Statistics.median(wrapper), Statistics.median(local))
            result.withLock {
                $0?.async = medians.0
                $0?.bareAsync = medians.1
                $0?.emptyWrapper = medians.2
                $0?.taskLocal = medians.3
            }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    /// Heap allocations per call (memcheck's count for 2n calls less that for n, over n), for
    /// `sync`, `async` and `none` (the loop alone); nil without valgrind.
    static func allocations(calls: Int) throws -> [String: Double]? {
        guard let valgrind = ValgrindFigure.valgrind, let executable = try ValgrindFigure.strippedCopy() else { return nil }
        defer { try? FileManager.default.removeItem(atPath: executable) }
        var perCall: [String: Double] = [:]
        for mode in ["none", "sync", "async"] {
            func count(_ calls: Int) throws -> Double {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: valgrind)
                process.arguments = ["--tool=memcheck", "--leak-check=no", executable, "--labels-child", mode, String(calls)]
                let errors = Pipe()
                process.standardError = errors
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                // "total heap usage: 1,234 allocs, 1,200 frees, 56,789 bytes allocated"
                guard let line = text.split(separator: "\n").first(where: { $0.contains("total heap usage") }),
                    let allocs = line.components(separatedBy: "usage:").last?.split(separator: " ").first
                else { throw CocoaError(.fileReadCorruptFile) }
                return Double(allocs.filter(\.isNumber)) ?? .nan
            }
            perCall[mode] = (try count(calls * 2) - count(calls)) / Double(calls)
        }
        return perCall
    }

    /// The child of `allocations`: `calls` calls in `mode`, then exit.
    static func child(mode: String, calls: Int) -> Never {
        let labels = Self.labels
        switch mode {
        case "sync":
            _ = time(calls) { labelled(labels, $0) }
        case "async":
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                _ = await timeAsync(calls) { await labelledAsync(labels, $0) }
                done.signal()
            }
            done.wait()
        default:
            _ = time(calls, step)
        }
        exit(0)
    }
}
