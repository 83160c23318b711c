import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

/// A loop that hangs inside `dlopen` (a library constructor that computes for a long time) holds
/// the dynamic loader's lock, which libunwind's default unwinder would need. HangWatch's capture
/// never takes it: the hang must be reported, and the watchdog must stay alive.
@Suite(.serialized) struct DlopenHangTests {
    /// Builds a shared library whose constructor spins for `milliseconds`.
    static func buildHangingLibrary(milliseconds: Int) throws -> String {
        try TestLibrary.build(
            name: "hangwatch_dlopen_hang",
            code: """
                #include <time.h>
                static long long now_ms(void) {
                    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
                    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
                }
                __attribute__((noinline)) void hangwatch_test_constructor_spin(void) {
                    long long end = now_ms() + \(milliseconds);
                    volatile unsigned long x = 1;
                    while (now_ms() < end) { for (int i = 0; i < 1000; i++) x = x * 6364136223846793005UL + 1; }
                }
                __attribute__((constructor)) static void hangwatch_test_constructor(void) {
                    hangwatch_test_constructor_spin();
                }
                """)
    }

    @Test func aHangInsideDlopenIsReportedAndTheWatchdogSurvives() throws {
        let library = try Self.buildHangingLibrary(milliseconds: 700)
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        loop.perform { dlopenHangingLibrary(library) }
        let reports = directory.waitForFinished(1, timeout: 15)
        try #require(reports.count == 1)
        let report = reports[0]
        #expect(report.durationMs >= 650)
        #expect(report.samples.contains { $0.stack != nil }, "\(report.samples)")
        // Captures inside the loader answer; at worst one times out. None blocks the watchdog.
        #expect(report.capture.errors.allSatisfy { $0.kind == "timeout" }, "\(report.capture.errors)")
        #expect(report.capture.errors.reduce(0) { $0 + $1.count } <= 1, "\(report.capture.errors)")
        #expect(report.heaviestStackContains("dlopenHangingLibrary"), "\(report.heaviestSymbols)")
        // The library loaded during the hang is in the final report's image list.
        #expect(report.images.contains { $0.path == library })
        #expect(report.heaviestStackContains("hangwatch_test_constructor_spin"), "\(report.heaviestSymbols)")

        // The watchdog is alive.
        loop.perform { _ = hangInPerformedBlock(milliseconds: 400) }
        #expect(directory.waitForFinished(2).count == 2)
        monitor.stop()
    }
}

/// Loads the library and keeps it loaded, as services keep their plugins.
@inline(never)
func dlopenHangingLibrary(_ path: String) {
    _ = dlopen(path, RTLD_NOW)
}
