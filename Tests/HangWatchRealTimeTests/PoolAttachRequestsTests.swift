@testable import HangWatch
import Testing

/// Attach jobs are asked for every pool thread not attached, until it is or patience runs out.
@Suite struct PoolAttachRequestsTests {
    func thread(_ tid: Int32, started: UInt64 = 1) -> MonitoredThread {
        MonitoredThread(tid: tid, startTimeTicks: started, stackLow: 0, stackHigh: 0, name: "oot.default-qos", isMain: false)
    }

    @Test func oneJobPerUnattachedThreadUntilPatienceRunsOutForIt() {
        var requests = PoolAttachRequests(patienceMicroseconds: 1_000)
        #expect(requests.due(unattached: [], at: 0).count == 0)
        #expect(requests.due(unattached: [thread(1), thread(2)], at: 100).count == 2)
        #expect(requests.due(unattached: [thread(1), thread(2), thread(3)], at: 600).count == 3)
        // 1 and 2 waited 1,000 µs: given up; 3 still hoped for.
        #expect(requests.due(unattached: [thread(1), thread(2), thread(3)], at: 1_100).count == 1)
        #expect(requests.due(unattached: [thread(1), thread(2), thread(3)], at: 1_600).count == 0)
    }

    @Test func aThreadAttachedOrGoneIsForgottenAndANewThreadWithItsIDStartsAfresh() {
        var requests = PoolAttachRequests(patienceMicroseconds: 1_000)
        #expect(requests.due(unattached: [thread(1)], at: 0).count == 1)
        #expect(requests.due(unattached: [], at: 500).count == 0)
        // Seen unattached again (attached threads are never so; a thread of that id that exited and
        // a new one started): patience counts from now.
        #expect(requests.due(unattached: [thread(1, started: 2)], at: 900).count == 1)
        #expect(requests.due(unattached: [thread(1, started: 2)], at: 1_800).count == 1)
        #expect(requests.due(unattached: [thread(1, started: 2)], at: 1_900).count == 0)
    }
}
