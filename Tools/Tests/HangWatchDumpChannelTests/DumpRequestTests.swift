import Testing

@testable import HangWatchDumpChannel

/// A request's nonce says what it asks for: bit 47 set for the tasks, clear for the threads; never
/// 0, never past 48 bits (the signal's value carries the dump tag above them).
@Suite struct DumpRequestTests {
    @Test func aTaskDumpsNonceHasBit47AndAThreadDumpsHasNot() {
        for _ in 0..<1000 {
            let tasks = DumpRequest.Kind.tasks.nonce()
            let threads = DumpRequest.Kind.threads.nonce()
            #expect(tasks & 1 << 47 != 0 && tasks < 1 << 48 && tasks & ((1 << 47) - 1) != 0)
            #expect(threads & 1 << 47 == 0 && threads != 0)
        }
    }
}
