import HangWatchReport
import HangWatchTestSupport
import Testing

/// The name signature: one value for one call path in any build of the same code, another for
/// another call path.
@Suite struct StackSignatureNamesTests {
    let images = [
        HangReport.Image(path: "/srv/app/app", buildId: "aa", base: "0x1000", size: 100, isMainExecutable: true),
        HangReport.Image(path: "/usr/lib/x86_64-linux-gnu/libc.so.6", buildId: "bb", base: "0x9000", size: 100, isMainExecutable: false),
        HangReport.Image(path: "/opt/swift/usr/lib/swift/linux/libFoundation.so", buildId: "cc", base: "0xa000", size: 100, isMainExecutable: false),
    ]

    /// An app frame at `offset` named `symbol` (the line says where in the file: it never counts).
    func app(_ symbol: String?, _ offset: Int, line: Int = 10, async: Bool? = nil) -> HangReport.Frame {
        HangReport.Frame(
            address: "0x" + String(0x5500 + offset, radix: 16), image: 0, offset: "0x" + String(offset, radix: 16),
            functionOffset: "0x" + String(offset & ~0xf, radix: 16), symbol: symbol, file: symbol == nil ? nil : "/src/App.swift",
            line: line, async: async)
    }
    func libc(_ symbol: String?, _ offset: Int) -> HangReport.Frame {
        HangReport.Frame(address: "0x7f00", image: 1, offset: "0x" + String(offset, radix: 16), symbol: symbol)
    }
    func foundation(_ symbol: String?, _ offset: Int) -> HangReport.Frame {
        HangReport.Frame(address: "0x7e00", image: 2, offset: "0x" + String(offset, radix: 16), symbol: symbol)
    }

    /// The outermost frames of a main thread, at `shift` in the build.
    func entry(_ shift: Int) -> [HangReport.Frame] {
        [app("main", 0x900 + shift), libc("__libc_start_call_main", 0x100), libc("__libc_start_main_impl", 0x200), app("_start", 0x10 + shift)]
    }
    func runLoop(_ shift: Int) -> [HangReport.Frame] {
        [foundation("Foundation.__NSFireTimer(_: Swift.Optional<__C.CFRunLoopTimerRef>, info: Swift.Optional<Swift.UnsafeMutableRawPointer>) -> ()", 0x500),
         foundation("__CFRunLoopDoTimer", 0x600), foundation("CFRunLoopRunSpecific", 0x700)]
    }

    func names(_ frames: [HangReport.Frame], complete: Bool = true, wait: String? = nil) -> String? {
        StackSignature.computeByNames(frames: frames, images: images, complete: complete, wait: wait)
    }

    /// A hang in `recompute` under a timer's closure, as build `shift` lays it out.
    func pricing(_ shift: Int, line: Int = 10) -> [HangReport.Frame] {
        [app("static app.Pricing.recompute(for: Swift.Int) -> Swift.UInt64", 0x1234 + shift, line: line),
         app("closure #1 @Sendable (Foundation.Timer) -> () in closure #2 @Sendable () -> () in main", 0x2240 + shift, line: line)]
            + runLoop(shift) + entry(shift)
    }

    @Test func aRebuildThatMovedEveryAddressKeepsTheNameSignatureButNotTheAddressOne() throws {
        let before = pricing(0), after = pricing(0x3_0000, line: 14)
        #expect(StackSignature.compute(frames: before, images: images) != StackSignature.compute(frames: after, images: images))
        let signature = try #require(names(before))
        #expect(names(after) == signature)
        #expect(signature.count == 16 && signature.allSatisfy(\.isHexDigit))
    }

    @Test func theOptimizersCopiesAndAnAsyncFunctionsPartsAreTheFunction() {
        let debug = [app("app.Store.fetch(key: Swift.String) async -> Swift.Int", 0x100),
                     app("app.Handler.serve() async -> ()", 0x200, async: true)] + entry(0)
        let release = [app("(1) await resume partial function for function signature specialization <Arg[0] = Owned To Guaranteed> of app.Store.fetch(key: Swift.String) async -> Swift.Int", 0x4100),
                       app("reabstraction thunk helper from @escaping @callee_guaranteed () -> () to @escaping @callee_unowned () -> ()", 0x4180),
                       app("(2) await resume partial function for app.Handler.serve() async -> ()", 0x4200, async: true)] + entry(0x4000)
        #expect(names(debug) != nil)
        #expect(names(debug) == names(release))
    }

    @Test func aThunkAndTheFunctionItCallsCountOnce() {
        let direct = [app("closure #1 () -> () in app.main() -> ()", 0x100), app("app.main() -> ()", 0x200)] + entry(0)
        let viaPartialApply = [app("closure #1 () -> () in app.main() -> ()", 0x100), app("partial apply for closure #1 () -> () in app.main() -> ()", 0x150),
                               app("app.main() -> ()", 0x200)] + entry(0)
        #expect(names(direct) == names(viaPartialApply))
    }

    @Test func differentCallersOfOneFunctionDiffer() {
        let fromCheckout = [libc("read", 0x30), app("app.readBody() -> ()", 0x100), app("app.checkout() -> ()", 0x200)] + runLoop(0) + entry(0)
        let fromCart = [libc("read", 0x30), app("app.readBody() -> ()", 0x100), app("app.cart() -> ()", 0x300)] + runLoop(0) + entry(0)
        #expect(names(fromCheckout, wait: "read") != names(fromCart, wait: "read"))
    }

    @Test func twoClosuresOfOneFunctionDiffer() {
        let first = [app("closure #1 () -> () in app.main() -> ()", 0x100)] + runLoop(0) + entry(0)
        let second = [app("closure #2 () -> () in app.main() -> ()", 0x180)] + runLoop(0) + entry(0)
        #expect(names(first) != names(second))
    }

    @Test func theSameFunctionComputingAndWaitingInTwoSystemCallsIsThreeCallPaths() {
        let frames = [libc("__GI___lll_lock_wait", 0x40), app("app.flush() -> ()", 0x100)] + runLoop(0) + entry(0)
        let signatures = [names(frames), names(frames, wait: "futex"), names(frames, wait: "read")]
        #expect(Set(signatures.compactMap { $0 }).count == 3)
    }

    @Test func systemFramesNeitherCountNorNeedNames() {
        let named = [libc("__GI___lll_lock_wait", 0x40), libc("___pthread_mutex_lock", 0x50), app("app.flush() -> ()", 0x100)] + runLoop(0) + entry(0)
        let unnamed = [libc(nil, 0x48), app("app.flush() -> ()", 0x100)] + runLoop(0) + entry(0)
        #expect(names(named, wait: "futex") != nil)
        #expect(names(named, wait: "futex") == names(unnamed, wait: "futex"))
    }

    @Test func anUnnamedAppFrameMeansNoNameSignature() {
        #expect(names([app(nil, 0x100), app("app.main() -> ()", 0x200)] + entry(0)) == nil)
        #expect(names([]) != nil)  // no frame to name: nothing is missing (the hash of nothing)
    }

    @Test func hangsReachedFromTheRunLoopWithNoAppFrameAreToldApartBySystemNames() {
        let decoding = [foundation("Foundation.JSONDecoder.decode<A>(_: A.Type, from: Foundation.Data) throws -> A", 0x800)] + runLoop(0) + entry(0)
        let formatting = [foundation("Foundation.DateFormatter.string(from: Foundation.Date) -> Swift.String", 0x900)] + runLoop(0) + entry(0)
        #expect(names(decoding) != nil && names(decoding) != names(formatting))
        // Then system frames count, so each needs a name.
        #expect(names([foundation(nil, 0x800)] + runLoop(0) + entry(0)) == nil)
    }

    @Test func aTruncatedStackIsMarked() {
        let frames = [app("app.flush() -> ()", 0x100), app("app.run() -> ()", 0x200)]
        #expect(names(frames, complete: false) != names(frames, complete: true))
    }

    @Test func theReportGroupsByNamesWhenNamedElseByAddresses() throws {
        var report = StackReports.reportWith(frames: pricing(0), images: images)
        #expect(report.grouping == HangReport.Grouping(signature: try #require(names(pricing(0))), kind: .names))
        report.heaviestStack?.frames[0].symbol = nil
        #expect(report.grouping == HangReport.Grouping(signature: report.signature, kind: .addresses))
        report.refreshNameSignature()
        #expect(report.nameSignature == nil)
    }

    @Test func theWaitIsTheSystemCallOfTheHeaviestStacksBlockedSamples() throws {
        var report = StackReports.reportWith(frames: pricing(0), images: images)
        let computing = report.grouping.signature
        #expect(report.grouping.kind == .names)
        report.samples = [
            HangReport.Sample(offsetMs: 250, stack: 0, method: "syscall", state: "S", syscall: "futex", cpuMs: 0, runQueueMs: 0, pauseUs: nil, error: nil),
            HangReport.Sample(offsetMs: 300, stack: 0, method: "unchanged", state: "S", syscall: "futex", cpuMs: 0, runQueueMs: 0, pauseUs: nil, error: nil),
            HangReport.Sample(offsetMs: 350, stack: 0, method: "signal", state: "R", syscall: "read", cpuMs: 1, runQueueMs: 0, pauseUs: 5, error: nil),
        ]
        #expect(report.heaviestWait == "futex")
        #expect(report.grouping.signature == names(pricing(0), wait: "futex"))
        #expect(report.grouping.signature != computing)
    }
}

extension StackReports {
    /// A report whose one sample's stack (and heaviest stack) is `frames`.
    static func reportWith(frames: [HangReport.Frame], images: [HangReport.Image]) -> HangReport {
        var report = StackReports.report(durationMs: 300, samples: [(250, ["x"])])
        report.frames = frames
        report.images = images
        report.stacks = [HangReport.Stack(frames: Array(frames.indices), truncated: false)]
        report.heaviestStack = HangReport.HeaviestStack(stack: 0, sampleCount: 1, weightMs: 50, frames: frames)
        report.signature = StackSignature.compute(frames: frames, images: images)
        return report
    }
}
