import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct SymbolNameTests {
    @Test(arguments: [
        ("static hangwatch_demo.DemoService.busyCompute(milliseconds: Swift.Int) -> Swift.UInt64",
         "hangwatch_demo.DemoService.busyCompute(milliseconds:)"),
        ("closure #1 @Sendable (Foundation.Timer) -> () in closure #1 @Sendable () -> () in main",
         "closure #1 in closure #1 in main"),
        ("app.f(_: Swift.Array<Swift.Int>, count: Swift.Dictionary<Swift.String, (Swift.Int, Swift.Int)>) -> ()",
         "app.f(_:count:)"),
        ("app.g() -> Swift.Optional<app.T>", "app.g()"),
        ("__CFRunLoopDoBlocks", "__CFRunLoopDoBlocks"),
        ("foo::bar(int, char const*)", "foo::bar(_:_:)"),
        ("@objc Foundation.__NSFireTimer(_: Swift.Optional<__C.CFRunLoopTimerRef>, info: Swift.Optional<Swift.UnsafeMutableRawPointer>) -> ()",
         "Foundation.__NSFireTimer(_:info:)"),
        ("clock_nanosleep@GLIBC_2.2.5", "clock_nanosleep"),
        ("memcpy@@GLIBC_2.14", "memcpy"),
    ])
    func shortensDemangledNames(_ full: String, _ short: String) {
        #expect(SymbolName.short(full) == short)
    }

    @Test func neverLosesAnUnbalancedName() {
        #expect(SymbolName.short("weird(name") == "weird(name")
    }
}
