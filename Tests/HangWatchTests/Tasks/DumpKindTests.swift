@testable import HangWatch
import Testing

@Suite struct DumpKindTests {
    @Test func bit47OfTheNonceAsksForTheTasks() {
        #expect(DumpKind(nonce: 7) == .threads)
        #expect(DumpKind(nonce: (1 << 47) - 1) == .threads)
        #expect(DumpKind(nonce: 1 << 47 | 7) == .tasks)
        #expect(DumpKind(nonce: (1 << 48) - 1) == .tasks)
    }
}
