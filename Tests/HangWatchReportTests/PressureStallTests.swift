@_spi(Internal) import HangWatchReport
import Testing

/// Pressure stall lines: real files of the project's VM (`/work/proto/containers/samples/`:
/// `proc/pressure-memory`, `v2-unified-hwproto/memory.pressure`).
@Suite struct PressureStallTests {
    @Test func pressureStallTotalsAreMicroseconds() throws {
        let system = try #require(PressureStall.parse(
            "some avg10=0.00 avg60=0.33 avg300=1.10 total=6846502\nfull avg10=0.00 avg60=0.03 avg300=0.12 total=960681\n"))
        #expect(system == PressureStall(someMicroseconds: 6_846_502, fullMicroseconds: 960_681))
        // samples/v2-unified-hwproto/memory.pressure (one task: some = full).
        #expect(PressureStall.parse("some avg10=0.00 avg60=0.08 avg300=0.26 total=1352831\nfull avg10=0.00 avg60=0.08 avg300=0.26 total=1352831\n")?.someMicroseconds == 1_352_831)
        #expect(PressureStall.parse("full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n") == nil)
        #expect(PressureStall.parse("") == nil)
    }
}
