@testable import HangWatch
import Testing

/// The sampler's decisions (`CapturePlan`) as tables: what is reused, walked, signalled (behind
/// which guard) or given up, and why. The real captures these plans drive are in the real-time
/// tests (`CaptureTests`, `CutShortTests`, `ProcessFaultTests`).
@Suite struct CapturePlanTests {
    static let read = ProcTask.SyscallState.inSyscall(number: 230, arguments: [1, 2, 3, 0, 0, 0], stackPointer: 0x7000, programCounter: 0x4000)
    static let readCall = CapturePlan.BlockedCall(number: 230, arguments: [1, 2, 3, 0, 0, 0], stackPointer: 0x7000, programCounter: 0x4000)
    static let otherCall = CapturePlan.BlockedCall(number: 7, arguments: [9, 0, 0, 0, 0, 0], stackPointer: 0x7000, programCounter: 0x4000)

    /// A sample before, with the fields the decisions read.
    static func previous(
        method: StackSample.Method? = nil, frames: [UInt] = [], state: Character? = nil, key: [UInt]? = nil,
        onCPU: UInt64 = 500, timeslices: UInt64 = 9, failure: StackSample.Failure? = nil, awake: UInt64? = nil
    ) -> StackSample {
        var sample = StackSample(
            microseconds: 1, frames: frames, method: method, truncated: false, state: state, blockedKey: key, onCPUNanoseconds: onCPU,
            failure: failure)
        sample.timeslices = timeslices
        sample.awakeVoluntarySwitches = awake
        return sample
    }

    static func schedule(onCPU: UInt64 = 500, timeslices: UInt64 = 9) -> ProcTask.SchedStat {
        ProcTask.SchedStat(onCPUNanoseconds: onCPU, runQueueNanoseconds: 40, timeslices: timeslices)
    }

    struct ReuseRow: CustomTestStringConvertible, Sendable {
        var name: String
        var previous: StackSample?
        var schedule: ProcTask.SchedStat
        var reuses: Bool
        var testDescription: String { name }
    }

    static let reuseRows: [ReuseRow] = [
        ReuseRow(
            name: "read blocked, not on a CPU since", previous: previous(method: .syscall, frames: [1, 2], key: readCall.key),
            schedule: schedule(), reuses: true),
        ReuseRow(
            name: "reused blocked, not on a CPU since", previous: previous(method: .unchanged, frames: [1, 2], key: readCall.key),
            schedule: schedule(), reuses: true),
        ReuseRow(name: "no sample before", previous: nil, schedule: schedule(), reuses: false),
        ReuseRow(
            name: "taken by signal", previous: previous(method: .signal, frames: [1, 2], key: readCall.key), schedule: schedule(),
            reuses: false),
        ReuseRow(
            name: "put on a CPU since", previous: previous(method: .syscall, frames: [1, 2], key: readCall.key),
            schedule: schedule(timeslices: 10), reuses: false),
        ReuseRow(
            name: "CPU time since", previous: previous(method: .syscall, frames: [1, 2], key: readCall.key),
            schedule: schedule(onCPU: 501), reuses: false),
        ReuseRow(
            name: "the kernel keeps no run count", previous: previous(method: .syscall, frames: [1, 2], key: readCall.key, timeslices: 0),
            schedule: schedule(timeslices: 0), reuses: false),
        ReuseRow(
            name: "no stack before", previous: previous(method: .syscall, frames: [], key: readCall.key), schedule: schedule(),
            reuses: false),
        ReuseRow(
            name: "not blocked in a call before", previous: previous(method: .syscall, frames: [1, 2], key: nil), schedule: schedule(),
            reuses: false),
        ReuseRow(
            name: "failed before", previous: previous(method: .syscall, frames: [1, 2], key: readCall.key, failure: .movedDuringCapture),
            schedule: schedule(), reuses: false),
    ]

    @Test(arguments: reuseRows) func aSampleBeforeIsReusedOnlyWhileTheThreadProvablyStaysInItsCall(_ row: ReuseRow) {
        #expect(CapturePlan.reusesPreviousSample(row.previous, schedule: row.schedule) == row.reuses)
    }

    struct LookRow: CustomTestStringConvertible, Sendable {
        var name: String
        var kernelState: ProcTask.SyscallState
        var state: Character?
        var attached = true
        var schedule = CapturePlanTests.schedule()
        var previous: StackSample?
        var signalAllowed = true
        var signalGuard = SignalGuard.stayedOnCPU
        var plan: CapturePlan
        var testDescription: String { name }
    }

    static let outside = ProcTask.SyscallState.blockedOutsideSyscall(stackPointer: 0x7000, programCounter: 0x4000)
    static func signal(checkMask: Bool, _ captureGuard: CapturePlan.GuardPlan) -> CapturePlan {
        .signal(CapturePlan.SignalPlan(checkMask: checkMask, captureGuard: captureGuard))
    }

    static let lookRows: [LookRow] = [
        LookRow(name: "stopped", kernelState: outside, state: "T", plan: .fail(.stopped)),
        LookRow(name: "stopped by a debugger", kernelState: outside, state: "t", plan: .fail(.stopped)),
        LookRow(name: "stopped before it attached", kernelState: outside, state: "T", attached: false, plan: .fail(.stopped)),
        // Never prepared: asked to prepare itself first, its mask read to choose the signal.
        LookRow(
            name: "running, never prepared", kernelState: .running, state: "R", attached: false,
            plan: .signal(CapturePlan.SignalPlan(checkMask: true, captureGuard: .stayedOnCPU(awakeVoluntarySwitches: nil), prepares: true))),
        LookRow(
            name: "running, never prepared, seen running before", kernelState: .running, state: "R", attached: false,
            previous: previous(method: .signal, frames: [1], state: "R", awake: 3),
            plan: .signal(CapturePlan.SignalPlan(checkMask: true, captureGuard: .runCount(9), prepares: true))),
        LookRow(
            name: "running, never prepared, no signal allowed", kernelState: .running, state: "R", attached: false, signalAllowed: false,
            plan: .fail(.threadNotAttached)),
        // A blocked thread needs no preparation: read in the mapping that holds its stack pointer.
        LookRow(name: "in a call, never prepared", kernelState: read, state: "S", attached: false, plan: .walkBlocked(readCall)),
        LookRow(
            name: "in a call, never prepared, no signal allowed", kernelState: read, state: "S", attached: false, signalAllowed: false,
            plan: .walkBlocked(readCall)),
        LookRow(name: "in a call, first sample", kernelState: read, state: "S", plan: .walkBlocked(readCall)),
        LookRow(
            name: "in the same call, no CPU time since", kernelState: read, state: "S",
            previous: previous(method: .signal, frames: [1, 2], key: readCall.key), plan: .reuseStack(readCall)),
        LookRow(
            name: "in the same call, CPU time since (woke and came back)", kernelState: read, state: "S",
            previous: previous(method: .syscall, frames: [1, 2], key: readCall.key, onCPU: 400), plan: .walkBlocked(readCall)),
        LookRow(
            name: "in the same call, no stack before", kernelState: read, state: "S",
            previous: previous(method: .syscall, frames: [], key: readCall.key), plan: .walkBlocked(readCall)),
        LookRow(
            name: "in another call", kernelState: read, state: "S", previous: previous(method: .syscall, frames: [1, 2], key: otherCall.key),
            plan: .walkBlocked(readCall)),
        LookRow(
            name: "in a call with a debugger attached (no signal needed)", kernelState: read, state: "S", signalAllowed: false,
            plan: .walkBlocked(readCall)),
        LookRow(name: "running with a debugger attached", kernelState: .running, state: "R", signalAllowed: false, plan: .fail(.debuggerAttached)),
        LookRow(
            name: "running, first sample: mask read, switches counted", kernelState: .running, state: "R",
            plan: signal(checkMask: true, .stayedOnCPU(awakeVoluntarySwitches: nil))),
        LookRow(
            name: "waiting on a page: signalled too", kernelState: outside, state: "D",
            plan: signal(checkMask: true, .stayedOnCPU(awakeVoluntarySwitches: nil))),
        LookRow(
            name: "running, seen running before with the same run count", kernelState: .running, state: "R",
            previous: previous(method: .signal, frames: [1], state: "R", awake: 3), plan: signal(checkMask: false, .runCount(9))),
        LookRow(
            name: "running, put on a CPU since it was seen running", kernelState: .running, state: "R",
            schedule: schedule(timeslices: 12), previous: previous(method: .signal, frames: [1], state: "R", awake: 3),
            plan: signal(checkMask: false, .stayedOnCPU(awakeVoluntarySwitches: 3))),
        LookRow(
            name: "running, seen blocked before with the same run count", kernelState: .running, state: "R",
            previous: previous(method: .syscall, frames: [1], state: "S", key: otherCall.key),
            plan: signal(checkMask: false, .stayedOnCPU(awakeVoluntarySwitches: nil))),
        LookRow(
            name: "running, no run count kept", kernelState: .running, state: "R", schedule: schedule(timeslices: 0),
            previous: previous(method: .signal, frames: [1], state: "R", timeslices: 0),
            plan: signal(checkMask: false, .stayedOnCPU(awakeVoluntarySwitches: nil))),
        LookRow(
            name: "running, the capture before timed out", kernelState: .running, state: "R",
            previous: previous(state: "R", failure: .timeout), plan: signal(checkMask: true, .stayedOnCPU(awakeVoluntarySwitches: nil))),
        LookRow(
            name: "running, the signal was blocked before", kernelState: .running, state: "R",
            previous: previous(state: "R", failure: .signalBlocked), plan: signal(checkMask: true, .stayedOnCPU(awakeVoluntarySwitches: nil))),
        LookRow(
            name: "running, the capture before was busy", kernelState: .running, state: "R",
            previous: previous(state: "R", failure: .busy), plan: signal(checkMask: false, .stayedOnCPU(awakeVoluntarySwitches: nil))),
        LookRow(name: "running, no guard (measurement)", kernelState: .running, state: "R", signalGuard: .lookAlone, plan: signal(checkMask: true, .none)),
        LookRow(
            name: "running, syscall file guard (measurement)", kernelState: .running, state: "R", signalGuard: .stillRunning,
            plan: signal(checkMask: true, .stillRunning)),
    ]

    @Test(arguments: lookRows) func aLookedAtThreadIsWalkedReusedSignalledOrLeftAlone(_ row: LookRow) {
        let look = CapturePlan.Look(schedule: row.schedule, kernelState: row.kernelState, state: row.state, attached: row.attached)
        let plan = CapturePlan.afterLooking(look, previous: row.previous, signalAllowed: row.signalAllowed, signalGuard: row.signalGuard)
        #expect(plan == row.plan)
    }

    @Test func theSyscallFileAloneTellsRunningFromInACall() {
        #expect(ProcTask.SyscallState.running.stateLetter == "R")
        #expect(Self.read.stateLetter == "S")
        #expect(Self.outside.stateLetter == nil)
    }

    @Test func aBlockedCallIsTheSameOnlyWithEveryRegisterAndArgumentEqual() {
        #expect(Self.readCall.key == [230, 1, 2, 3, 0, 0, 0, 0x7000, 0x4000])
        #expect(Self.readCall.isSame(as: Self.read))
        #expect(!Self.readCall.isSame(as: .running))
        #expect(!Self.readCall.isSame(as: nil))
        #expect(!Self.readCall.isSame(as: .inSyscall(number: 230, arguments: [1, 2, 3, 0, 0, 0], stackPointer: 0x7008, programCounter: 0x4000)))
        #expect(!Self.readCall.isSame(as: .inSyscall(number: 230, arguments: [1, 2, 4, 0, 0, 0], stackPointer: 0x7000, programCounter: 0x4000)))
    }

    @Test(arguments: [
        (awake: UInt64?.none, switches: UInt64(5), pauses: true),
        (awake: 5, switches: 5, pauses: false),
        (awake: 4, switches: 5, pauses: true),
    ])
    func aCountedThreadPausesUnlessTheSampleBeforeProvedItAwakeAtThatCount(_ row: (awake: UInt64?, switches: UInt64, pauses: Bool)) {
        #expect(CapturePlan.GuardPlan.pauses(awakeVoluntarySwitches: row.awake, switches: row.switches) == row.pauses)
    }

    @Test(arguments: [
        (mask: UInt64(1) << 9, signal: Int32(10), blocks: true),
        (mask: UInt64(1) << 10, signal: 10, blocks: false),
        (mask: UInt64(1) << 63, signal: 64, blocks: true),
        (mask: UInt64.max, signal: 0, blocks: false),
        (mask: UInt64.max, signal: 65, blocks: false),
        (mask: 0, signal: 34, blocks: false),
    ])
    func theMaskBlocksTheSignalByItsBit(_ row: (mask: UInt64, signal: Int32, blocks: Bool)) {
        #expect(CapturePlan.blocks(row.mask, signal: row.signal) == row.blocks)
    }

    @Test(arguments: [
        (error: UnsafeCaptureBridge.SignalCaptureError?.none, lookedAgain: false, outcome: CapturePlan.SignalOutcome.captured),
        (error: nil, lookedAgain: true, outcome: .captured),
        (error: .sleptAtCapture, lookedAgain: false, outcome: .lookAgain),
        (error: .sleptAtCapture, lookedAgain: true, outcome: .fail(.sleptAtCapture, retakeHandler: false)),
        (error: .timeout, lookedAgain: false, outcome: .fail(.timeout, retakeHandler: true)),
        (error: .threadGone, lookedAgain: false, outcome: .fail(.threadExited, retakeHandler: false)),
        (error: .busy, lookedAgain: false, outcome: .fail(.busy, retakeHandler: false)),
        (error: .sendFailed(1), lookedAgain: false, outcome: .fail(.sendFailed, retakeHandler: false)),
    ])
    func aCaptureEndsCapturedLookedAtAgainOrFailedWithItsReason(
        _ row: (error: UnsafeCaptureBridge.SignalCaptureError?, lookedAgain: Bool, outcome: CapturePlan.SignalOutcome)
    ) {
        #expect(CapturePlan.outcome(row.error, lookedAgain: row.lookedAgain) == row.outcome)
    }

    @Test func theCountACaptureProvedTheThreadAwakeWithComesFromItsGuard() {
        let before = Self.previous(state: "R", awake: 3)
        #expect(CapturePlan.ArmedGuard.voluntarySwitches(8).awakeVoluntarySwitches(previous: before) == 8)
        #expect(CapturePlan.ArmedGuard.runCount(9).awakeVoluntarySwitches(previous: before) == 3)
        #expect(CapturePlan.ArmedGuard.runCount(9).awakeVoluntarySwitches(previous: nil) == nil)
        #expect(CapturePlan.ArmedGuard.stillRunning.awakeVoluntarySwitches(previous: before) == nil)
        #expect(CapturePlan.ArmedGuard.none.awakeVoluntarySwitches(previous: before) == nil)
    }
}
