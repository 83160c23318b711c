import Foundation

/// Runs Swift jobs on the bench loop's thread (inside a run-loop block), so a hang can be an async
/// function with async callers on a thread a run-loop monitor watches.
final class LoopExecutor: SerialExecutor, @unchecked Sendable {
    let loop: BenchLoop
    init(loop: BenchLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        loop.perform { unowned.runSynchronously(on: executor) }
    }
}

/// An actor on the bench loop: `nest` calls itself `callers` times (each an async call, so each
/// level is one async caller in the context chain), then spins like `hangAtDepth`.
actor LoopActor {
    let executor: LoopExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    init(loop: BenchLoop) { executor = LoopExecutor(loop: loop) }

    @inline(never)
    func nest(_ callers: Int, milliseconds: Int, gaps: GapRecorder) async -> UInt64 {
        if callers > 0 {
            let result = await nest(callers - 1, milliseconds: milliseconds, gaps: gaps)
            blackHole(result)
            return result &+ 1
        }
        return hangAtDepth(0, milliseconds: milliseconds, gaps: gaps)
    }

    /// Runs the hang on the loop and waits for it.
    static func hang(on loop: BenchLoop, callers: Int, milliseconds: Int, gaps: GapRecorder) {
        let actor = LoopActor(loop: loop)
        let done = DispatchSemaphore(value: 0)
        Task {
            _ = await actor.nest(callers, milliseconds: milliseconds, gaps: gaps)
            done.signal()
        }
        done.wait()
    }
}
