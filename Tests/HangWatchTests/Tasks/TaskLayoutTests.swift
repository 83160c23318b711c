@testable import HangWatch
import Testing

/// The gate: only a runtime whose words are those the table was verified against is read; any
/// other is said in one sentence, never guessed.
@Suite struct TaskLayoutTests {
    static func words(version: UInt32?, size: UInt?, escalation: Bool?, metadata: UInt = 0x7f00_1000) -> UnsafeTaskRuntime.Words {
        UnsafeTaskRuntime.Words(
            taskMetadata: metadata, nonFutureAdapter: 1, futureAdapter: 2, taskWaitThrowingResumeAdapter: 3, taskFutureWaitResumeAdapter: 4,
            layoutVersion: version, taskSize: size, supportsEscalation: escalation)
    }

    @Test func swift631sWordsAreRecognised() {
        #if arch(x86_64)
            #expect(TaskLayout.recognise(Self.words(version: 1, size: 208, escalation: false)) == .success(.swift631))
        #endif
    }

    @Test(arguments: [
        (UInt32?(2), UInt?(208), Bool?(false), "concurrency layout version 2, task size 208 bytes, no priority escalation"),
        (1, 216, false, "concurrency layout version 1, task size 216 bytes, no priority escalation"),
        (1, 208, true, "concurrency layout version 1, task size 208 bytes, priority escalation"),
        (nil, nil, nil, "no layout version, no task size, escalation unsaid"),
    ])
    func anyOtherRuntimeIsSaidOnceAndNothingIsRead(_ version: UInt32?, _ size: UInt?, _ escalation: Bool?, _ said: String) throws {
        guard case .failure(let problem) = TaskLayout.recognise(Self.words(version: version, size: size, escalation: escalation)) else {
            Issue.record("recognised")
            return
        }
        #expect(problem.reason.hasPrefix("task layout not recognised for Swift \(TaskLayout.builtWithSwift) (the runtime says \(said);"), "\(problem.reason)")
        #expect(problem.reason.hasSuffix(": no tasks listed"))
        #expect(problem.reason.contains("verified: Swift 6.3.1 on Linux x86_64: layout 1, 208 bytes"))
    }

    @Test func aProcessWithoutTheRuntimeListsNoTasks() {
        #expect(TaskLayout.recognise(Self.words(version: 1, size: 208, escalation: false, metadata: 0))
            == .failure(TaskLayoutProblem(reason: "no Swift concurrency runtime in the process: no tasks listed")))
    }

    /// This process (the test runner, Swift 6.3.1 here) says the words the table was made for,
    /// through the weak references: what a service linked with the static runtime reads too.
    @Test func thisProcesssRuntimeSaysItsWords() {
        let words = UnsafeTaskRuntime.words()
        #expect(words.taskMetadata != 0 && words.futureAdapter != 0 && words.nonFutureAdapter != 0)
        #expect(words.layoutVersion == 1 && words.taskSize == 208 && words.supportsEscalation == false, "\(words)")
        #expect(SwiftTaskLayout.current == .recognised)
    }
}
