@testable import HangWatch
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// How a thread that never ran the attach step is asked to prepare itself (`ThreadPreparation`),
/// as tables: which signal a mask lets through, and the stack bounds its answer gives. The real
/// preparation (a libdispatch worker by `SIGPROF`, a plain thread by the capture signal) is in the
/// real-time tests (`ThreadPreparerTests`).
@Suite struct ThreadPreparationTests {
    /// What a libdispatch worker's `status` says on this machine's libdispatch (Swift 6.3.1): every
    /// signal blocked but SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGKILL, SIGSEGV, SIGPIPE, SIGSTOP,
    /// SIGPROF, SIGSYS and glibc's 32 and 33.
    static let workerMask: UInt64 = 0xffff_fffe_3bfb_ea27
    static let capture = CaptureSignal.defaultSignal

    static func bit(_ signal: Int32) -> UInt64 { 1 << UInt64(signal - 1) }

    @Test func aLibdispatchWorkersMaskIsKnownAndNoOtherIs() {
        #expect(ThreadPreparation.isLibdispatchWorkerMask(Self.workerMask))
        // glibc's own two real-time signals may be set or not: the same worker mask.
        #expect(ThreadPreparation.isLibdispatchWorkerMask(Self.workerMask | Self.bit(32) | Self.bit(33)))
        #expect(!ThreadPreparation.isLibdispatchWorkerMask(0))
        #expect(!ThreadPreparation.isLibdispatchWorkerMask(Self.bit(Self.capture)), "a service's own choice: the capture signal alone")
        #expect(!ThreadPreparation.isLibdispatchWorkerMask(Self.workerMask | Self.bit(SIGPROF)), "SIGPROF blocked too")
        #expect(!ThreadPreparation.isLibdispatchWorkerMask(Self.workerMask & ~Self.bit(SIGUSR1)), "one more signal let through")
    }

    struct SignalRow: CustomTestStringConvertible, Sendable {
        var name: String
        var blocked: UInt64?
        var profiling: Int32?
        var signal: Int32?
        var testDescription: String { name }
    }

    static let signalRows: [SignalRow] = [
        SignalRow(name: "nothing blocked: the capture signal", blocked: 0, profiling: SIGPROF, signal: capture),
        SignalRow(name: "others blocked, not the capture signal", blocked: ~bit(capture), profiling: SIGPROF, signal: capture),
        SignalRow(name: "a libdispatch worker: SIGPROF", blocked: workerMask, profiling: SIGPROF, signal: SIGPROF),
        SignalRow(name: "a libdispatch worker, SIGPROF not ours", blocked: workerMask, profiling: nil, signal: nil),
        SignalRow(name: "the service blocks the capture signal itself", blocked: bit(capture), profiling: SIGPROF, signal: nil),
        SignalRow(name: "the service blocks every signal", blocked: UInt64.max, profiling: SIGPROF, signal: nil),
        SignalRow(name: "the mask could not be read", blocked: nil, profiling: SIGPROF, signal: nil),
    ]

    @Test(arguments: signalRows) func aThreadIsAskedBySignalItsMaskLetsThroughOnly(_ row: SignalRow) {
        #expect(ThreadPreparation.signal(blocked: row.blocked, capture: Self.capture, profiling: row.profiling) == row.signal)
    }

    @Test func theBoundsAreTheStackMappingUpToTheThreadPointer() throws {
        let mappings = [StackMapping(start: 0x1000, end: 0x9000), StackMapping(start: 0x10000, end: 0x20000)]
        // A glibc thread: its descriptor at the top of the mapping that holds its stack.
        let thread = try #require(ThreadPreparation.bounds(stackPointer: 0x12000, threadPointer: 0x1f700, mappings: mappings))
        #expect(thread.low == 0x10000 && thread.high == 0x1f700)
        // The main thread: its descriptor elsewhere, the whole [stack] mapping.
        let main = try #require(ThreadPreparation.bounds(stackPointer: 0x2000, threadPointer: 0x50000, mappings: mappings))
        #expect(main.low == 0x1000 && main.high == 0x9000)
        // A thread pointer below the stack pointer bounds nothing: the mapping's end.
        let below = try #require(ThreadPreparation.bounds(stackPointer: 0x12000, threadPointer: 0x11000, mappings: mappings))
        #expect(below.high == 0x20000)
        #expect(ThreadPreparation.bounds(stackPointer: 0x9000, threadPointer: 0x9100, mappings: mappings) == nil, "in no mapping")
    }
}
