import Foundation
@testable import HangWatch
@_spi(Internal) import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct ProcTaskTests {
    @Test func parsesEveryFormOfTheSyscallFile() {
        #expect(ProcTask.parseSyscall("running\n") == .running)
        #expect(ProcTask.parseSyscall("-1 0x7ffd1000 0x401000\n") == .blockedOutsideSyscall(stackPointer: 0x7ffd1000, programCounter: 0x401000))
        #expect(
            ProcTask.parseSyscall("202 0x7f00 0x80 0x2 0x0 0x0 0x0 0x7ffd2000 0x7f1234\n")
                == .inSyscall(number: 202, arguments: [0x7f00, 0x80, 0x2, 0, 0, 0], stackPointer: 0x7ffd2000, programCounter: 0x7f1234))
        #expect(ProcTask.parseSyscall("garbage") == nil)
        #expect(ProcTask.parseSyscall("202 0x1") == nil)
    }

    @Test func readsTheVoluntarySwitchesOfARealThreadAndTheyMoveWhenItSleeps() throws {
        let status = "Name:\tw\nnonvoluntary_ctxt_switches:\t9\n"
        #expect(ProcStatus.voluntarySwitches(bytes: ArraySlice(Array(status.utf8))) == nil)
        let both = "Name:\tw\nvoluntary_ctxt_switches:\t1234\nnonvoluntary_ctxt_switches:\t9\n"
        #expect(ProcStatus.voluntarySwitches(bytes: ArraySlice(Array(both.utf8))) == 1234)
        let files = try #require(ProcTaskFiles(tid: UnsafeCaptureBridge.currentThreadID()))
        let before = try #require(files.readVoluntarySwitches())
        usleep(2_000)
        let after = try #require(files.readVoluntarySwitches())
        #expect(after > before)
        // Computing does not move it.
        let start = DispatchTime.now().uptimeNanoseconds
        var spin: UInt64 = 1
        while DispatchTime.now().uptimeNanoseconds - start < 2_000_000 { spin = spin &* 31 &+ 7 }
        #expect(spin != 0)
        #expect(files.readVoluntarySwitches() == after)
    }

    @Test func parsesSchedStat() {
        #expect(ProcTask.parseSchedStat("123456 7890 12\n") == ProcTask.SchedStat(onCPUNanoseconds: 123456, runQueueNanoseconds: 7890, timeslices: 12))
        #expect(ProcTask.parseSchedStat("123456 7890\n")?.timeslices == 0)
        #expect(ProcTask.parseSchedStat("x") == nil)
    }

    @Test func readsThisThread() throws {
        let task = ProcTask(tid: UnsafeCaptureBridge.currentThreadID())
        let stat = try #require(task.stat())
        #expect(stat.state == "R")
        // Reading its own syscall file, a thread is inside read(2) (number 0 on x86_64).
        if case .inSyscall(let number, _, _, _)? = task.syscall() {
            #expect(SyscallNames.name(number) == "read")
        } else {
            Issue.record("expected to see our own read(2)")
        }
        #expect(task.blockedSignals() != nil)
    }

    @Test func namesCommonSyscalls() {
        #expect(SyscallNames.name(202) == "futex")
        #expect(SyscallNames.name(230) == "clock_nanosleep")
        #expect(SyscallNames.name(99999) == "syscall 99999")
    }
}
