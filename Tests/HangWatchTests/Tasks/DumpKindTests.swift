@testable import HangWatch
import Testing

@Suite struct DumpKindTests {
    @Test func bit47OfTheNonceAsksForTheTasks() {
        #expect(DumpKind(nonce: 7) == .threads)
        #expect(DumpKind(nonce: (1 << 46) - 1) == .threads)
        #expect(DumpKind(nonce: 1 << 47 | 7) == .tasks)
        #expect(DumpKind(nonce: (1 << 48) - 1) == .tasks)
    }

    /// Bit 46 asks for the recent windows; bit 47 (the tasks) wins where a nonce has both, as a
    /// monitor that predates recent-window dumps reads it.
    @Test func bit46OfTheNonceAsksForTheRecentWindows() {
        #expect(DumpKind(nonce: 1 << 46) == .recent)
        #expect(DumpKind(nonce: 1 << 46 | 7) == .recent)
        #expect(DumpKind(nonce: (1 << 47) - 1) == .recent)
        #expect(DumpKind(nonce: 1 << 47 | 1 << 46 | 7) == .tasks)
    }
}
