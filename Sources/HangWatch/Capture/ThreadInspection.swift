import Synchronization

/// The one way this process looks at its threads on Linux: every stack sample (a hung thread's, a
/// lock holder's, a pool thread's, a dump's, the tools' probe) is taken by a sampler made here, and
/// what those samplers share is kept here once per process (`ProcessRuntime.threads`): the
/// preparer of threads that never ran the attach step (their alternate stacks and masks are the
/// process's, whichever monitor met them first), and the count of captures that cut a system call
/// short. The C capture slot they take turns at is the bridge's (`UnsafeCaptureBridge.captureSlot`).
final class ThreadInspection: Sendable {
    let preparer = ThreadPreparer()
    /// Captures whose signal cut a system call short (`HangMonitor.Statistics`, the heartbeat).
    let callsCutShort = Atomic<Int>(0)

    /// A sampler: `signal` the capture signal (0: never signal, as a dump or a holder's walk), its
    /// proc files kept open for the thread it samples.
    func sampler(
        signal: Int32, maxFrames: Int, timeoutNanoseconds: Int64, clock: any MonotonicClock = SystemMonotonicClock(),
        signalGuard: SignalGuard = .stayedOnCPU
    ) -> LinuxStackSampler {
        LinuxStackSampler(
            inspection: self, signal: signal, maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds, clock: clock,
            signalGuard: signalGuard)
    }
}
