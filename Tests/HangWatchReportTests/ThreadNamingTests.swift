import HangWatchReport
import Testing

@Suite struct ThreadNamingTests {
    @Test(arguments: [
        ("-qos.overcommit", "libdispatch worker, overcommit pool (the main queue and serial queues run here)"),
        ("oot.default-qos", "Swift cooperative pool (libdispatch worker, default priority)"),
        (".background-qos", "Swift cooperative pool (libdispatch worker, background priority)"),
        ("NIO-ELT-0-#1", "SwiftNIO event loop"),
        ("NIO-SGLTN-0-#0", "SwiftNIO event loop"),
        ("TP-#3", "SwiftNIO thread pool"),
    ])
    func knownNamesHaveARole(_ name: String, _ role: String) {
        #expect(ThreadNaming.role(of: name) == role)
    }

    @Test func otherNamesHaveNone() {
        #expect(ThreadNaming.role(of: "billing-worker") == nil)
        #expect(ThreadNaming.role(of: "") == nil)
    }
}
