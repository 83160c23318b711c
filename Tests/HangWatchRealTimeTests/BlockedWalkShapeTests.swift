import CStackShapes
import Foundation
@testable import HangWatch
import Testing

/// The blocked-thread walk on stacks built by hand over machine code of known shapes
/// (Tests/CStackShapes): each proof that reaches past a frame real code left unproven is shown to
/// prove the true chain, and, on a stack where a stale frame record would make a wrong chain look
/// right, to refuse it. The walk reads only the hand-made stack and the loaded code, exactly as it
/// reads a blocked thread's stack from the watchdog.
@Suite(.serialized) struct BlockedWalkShapeTests {
    init() throws {
        try installCapture(signal: CaptureSignal.defaultSignal)
    }

    /// A stack of 64 words; `word(k)` is the address `sp + 8k`. As at any call, the innermost return
    /// address (at `sp`) lies 8 bytes off a 16-byte boundary, so frame records are 16-byte aligned;
    /// 15 words lie below `sp` (the walk may read the red zone).
    final class HandStack {
        private let memory = UnsafeMutableRawPointer.allocate(byteCount: 64 * 8, alignment: 16)
        init() { memory.initializeMemory(as: UInt.self, repeating: 0x5151_5151, count: 64) }
        deinit { memory.deallocate() }
        var sp: UInt { UInt(bitPattern: memory) + 15 * 8 }
        var high: UInt { UInt(bitPattern: memory) + 64 * 8 }
        var low: UInt { UInt(bitPattern: memory) }
        func word(_ k: Int) -> UInt { sp + UInt(8 * k) }
        subscript(k: Int) -> UInt {
            get { memory.load(fromByteOffset: (15 + k) * 8, as: UInt.self) }
            set { memory.storeBytes(of: newValue, toByteOffset: (15 + k) * 8, as: UInt.self) }
        }
    }

    static func address(_ label: String) throws -> UInt {
        let address = UInt(shape_address(label))
        try #require(address != 0, "no shape \(label) (x86_64 only)")
        return address
    }

    /// Walks `stack` as a thread blocked at `shape_pc` whose stack pointer is `stack.sp`.
    static func walk(_ stack: HandStack) throws -> (frames: [UInt], flags: UnsafeCaptureBridge.UnwindFlags) {
        let walk = UnsafeCaptureBridge.captureBlocked(
            stackPointer: stack.sp, programCounter: try address("shape_pc"), stackLow: stack.low, stackHigh: stack.high, maxFrames: 32)
        return (walk.frames, walk.flags)
    }

    /// leaf <- F <- `caller` (F's record at sp + 24) <- `outer`: the layout of a call from `caller`
    /// that reaches F (directly, through a stub, or by a tail call) and F's call to the leaf.
    static func callerChain(f: String, caller: String, outer: String) throws -> HandStack {
        let stack = HandStack()
        stack[0] = try address(f + "_ret")
        stack[1] = 0x1111
        stack[2] = 0x2222
        stack[3] = stack.word(5)  // F's record: the caller's rbp ...
        stack[4] = try address(caller + "_ret")  // ... and its return address
        stack[5] = stack.word(7)  // the caller's record
        stack[6] = try address(outer + "_ret")
        stack[7] = 0
        stack[8] = 0
        return stack
    }

    // MARK: a tail call through a function pointer (llhttp's callback dispatcher)

    @Test func aCallerWhoseCalleeTailCallsThroughAFunctionPointerIsProven() throws {
        let stack = try Self.callerChain(f: "shape_f", caller: "shape_dispatch_caller", outer: "shape_outer_dispatch")
        let (frames, flags) = try Self.walk(stack)
        #expect(frames == [try Self.address("shape_pc"), stack[0], stack[4], stack[6]], "\(flags)")
        #expect(!flags.isTruncated)
        #expect(flags.framePointer == .prologue)
    }

    /// An indirect jump with the frame still set up is a switch, not a tail call: a record whose
    /// call reaches it does not prove a call to F.
    @Test func anIndirectJumpInsideAFrameProvesNoCall() throws {
        let stack = try Self.callerChain(f: "shape_f", caller: "shape_switch_caller", outer: "shape_outer_switch")
        let (frames, flags) = try Self.walk(stack)
        #expect(frames == [try Self.address("shape_pc"), stack[0]], "\(flags)")
        #expect(flags.truncation == .framePointerUnproven)
    }

    // MARK: a merged function's thunk (push rbp; mov rbp, rsp; pop rbp; jmp rel8)

    @Test func aCallThroughAMergedFunctionsThunkReachesItsTarget() throws {
        let stack = try Self.callerChain(f: "shape_g", caller: "shape_thunk_caller", outer: "shape_outer_thunk")
        let (frames, flags) = try Self.walk(stack)
        #expect(frames == [try Self.address("shape_pc"), stack[0], stack[4], stack[6]], "\(flags)")
        #expect(!flags.isTruncated)
    }

    @Test func aThunkThatJumpsToAnotherFunctionProvesNoCall() throws {
        let stack = try Self.callerChain(f: "shape_g", caller: "shape_thunk_h_caller", outer: "shape_outer_thunk_h")
        let (frames, flags) = try Self.walk(stack)
        #expect(frames == [try Self.address("shape_pc"), stack[0]], "\(flags)")
        #expect(flags.isTruncated)
    }

    // MARK: a function without call-frame information that keeps no frame pointer

    /// U (push rax; call; pop rcx; ret) has no call-frame information. Its straight-line code puts
    /// its return address 8 bytes above its stack pointer; the word it pushed holds a stale return
    /// address whose call enters U too (another caller's): the code's depth, not the first word
    /// that looks right, decides.
    @Test func aFramelessFunctionWithoutUnwindInformationIsSteppedByItsCodesDepth() throws {
        let stack = HandStack()
        stack[0] = try Self.address("shape_u_ret")
        stack[1] = try Self.address("shape_u_other_caller_ret")  // stale, in U's pushed word
        stack[2] = try Self.address("shape_fu_ret")
        stack[3] = 0x3333
        stack[4] = 0x4444
        stack[5] = stack.word(7)
        stack[6] = try Self.address("shape_fu_caller_ret")
        stack[7] = stack.word(9)
        stack[8] = try Self.address("shape_outer_fu_ret")
        let (frames, flags) = try Self.walk(stack)
        #expect(frames == [try Self.address("shape_pc"), stack[0], stack[2], stack[6], stack[8]], "\(flags)")
        #expect(!flags.isTruncated)
    }

    // MARK: interrupted on the first instruction of a wrapper without call-frame information

    /// W (xor edi, edi; jmp H) has no call-frame information and is reached from its caller
    /// through a stub (jmp *slot, a PLT slot) that is not in W's stretch of code. Interrupted on
    /// W's first instruction, the return address at the stack pointer is its caller's: the call
    /// reaches W on the way through the stub, though not at the stub's end (H). Seen on a pool
    /// thread spinning on `DispatchTime.now()` (W's shape) beside a busy CPU: the stack stopped at
    /// W, the job's function unread, and a 300 ms job was cut in two under the threshold.
    @Test func aWrapperReachedThroughAStubIsSteppedFromItsFirstInstruction() throws {
        let stack = HandStack()
        stack[0] = try Self.address("shape_w_caller_ret")
        stack[1] = stack.word(3)  // the caller's record
        stack[2] = try Self.address("shape_outer_w_ret")
        stack[3] = 0
        stack[4] = 0
        let walk = UnsafeCaptureBridge.captureBlocked(
            stackPointer: stack.sp, programCounter: try Self.address("shape_w"), stackLow: stack.low, stackHigh: stack.high, maxFrames: 32)
        #expect(walk.frames == [try Self.address("shape_w"), stack[0], stack[2]], "\(walk.flags)")
        #expect(!walk.flags.isTruncated, "\(walk.flags)")
    }

    // MARK: a prologue with no fixed frame, called through a function pointer

    /// Z (push rbp; mov rbp, rsp; call) is called indirectly, so no call proves its record: only
    /// its code places it (straight-line code: rbp set at depth 8, the call at depth 8).
    @Test func aPrologueWithNoFixedFramePlacesItsRecord() throws {
        let stack = HandStack()
        stack[0] = try Self.address("shape_z_ret")
        stack[1] = stack.word(3)
        stack[2] = try Self.address("shape_z_caller_ret")
        stack[3] = stack.word(5)
        stack[4] = try Self.address("shape_outer_z_ret")
        let (frames, flags) = try Self.walk(stack)
        #expect(frames == [try Self.address("shape_pc"), stack[0], stack[2], stack[4]], "\(flags)")
        #expect(!flags.isTruncated)
        #expect(flags.framePointer == .prologue)
    }

    /// D allocates its frame at run time (sub rsp, rdi) before its call: its code says nothing exact.
    /// Below its true record (sp + 40) lies a stale one (sp + 8, where straight-line code would put
    /// it if the allocation were ignored) whose chain checks out just as well, through another
    /// caller of D: two roots that disagree, so the stack stops at D, marked, rather than guess.
    @Test func aFrameAllocatedAtRunTimeIsNotPlacedByItsCode() throws {
        let stack = HandStack()
        stack[0] = try Self.address("shape_d_ret")
        stack[1] = stack.word(3)  // stale record: D called from its other caller
        stack[2] = try Self.address("shape_d_other_caller_ret")
        stack[3] = stack.word(11)
        stack[4] = try Self.address("shape_outer_d_other_ret")
        stack[5] = stack.word(7)  // D's true record
        stack[6] = try Self.address("shape_d_caller_ret")
        stack[7] = stack.word(9)
        stack[8] = try Self.address("shape_outer_d_ret")
        stack[11] = 0
        stack[12] = 0
        let (frames, flags) = try Self.walk(stack)
        #expect(frames == [try Self.address("shape_pc"), stack[0]], "\(flags)")
        #expect(flags.truncation == .framePointerAmbiguous)
    }
}
