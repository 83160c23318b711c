import Dispatch
import Glibc
import Synchronization
import Testing

@testable import HangWatch

/// The process's thread list, read again only when the thread count or the last process id
/// handed out moved: real threads, started and ended here.
@Suite struct ProcessThreadListTests {
    /// Starts a thread that reports its id and lives until `release` is signalled.
    func startThread(release: DispatchSemaphore, ended: DispatchSemaphore) -> Int32 {
        let started = DispatchSemaphore(value: 0)
        let tid = Atomic<Int32>(0)
        NamedThread.start("hw-list-test", stackSize: 256 << 10) {
            tid.store(UnsafeCaptureBridge.currentThreadID(), ordering: .releasing)
            started.signal()
            release.wait()
            ended.signal()
        }
        started.wait()
        return tid.load(ordering: .acquiring)
    }

    /// Waits (a bounded number of short waits) until `tid` is gone from `/proc/self/task`: a thread
    /// that signalled its end is still exiting.
    func waitUntilGone(_ tid: Int32) -> Bool {
        for _ in 0..<2_000 {
            if !ProcessThreadList.current().contains(tid) { return true }
            usleep(1_000)
        }
        return false
    }

    @Test func aThreadThatStartsOrEndsIsSeenAtTheNextCallAndAnUnchangedListIsNotReadAgain() throws {
        let list = ProcessThreadList()
        let first = list.threadIDs()
        #expect(first.contains(UnsafeCaptureBridge.currentThreadID()))
        let release = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        let tid = startThread(release: release, ended: ended)
        #expect(list.threadIDs().contains(tid))
        let listings = list.listings

        // Nothing started or ended (in this process, or in the namespace): the last list.
        var unchanged = 0
        for _ in 0..<20 {
            let before = list.listings
            let tids = list.threadIDs()
            if list.listings == before {
                unchanged += 1
                #expect(tids.contains(tid))
            }
        }
        // Other tests' threads (and other processes of the namespace) may start and end meanwhile;
        // most calls find nothing moved.
        #expect(unchanged >= 10, "listed \(list.listings - listings) times in 20 calls")

        release.signal()
        ended.wait()
        try #require(waitUntilGone(tid))
        #expect(!list.threadIDs().contains(tid))
    }

    /// One thread ends and another starts between two calls: the count is the same, the last
    /// process id is not.
    @Test func aThreadReplacedByAnotherBetweenTwoCallsIsSeen() throws {
        let list = ProcessThreadList()
        let release = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        let old = startThread(release: release, ended: ended)
        #expect(list.threadIDs().contains(old))
        release.signal()
        ended.wait()
        try #require(waitUntilGone(old))
        let keep = DispatchSemaphore(value: 0)
        let keptEnded = DispatchSemaphore(value: 0)
        let new = startThread(release: keep, ended: keptEnded)
        let tids = list.threadIDs()
        #expect(tids.contains(new) && !tids.contains(old))
        keep.signal()
        keptEnded.wait()
    }
}
