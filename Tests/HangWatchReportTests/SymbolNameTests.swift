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
        // A private declaration keeps its name (not `(_:)`), without the file discriminator.
        ("NIOCore.ChannelHandlerContext.(invokeChannelRead in _9A0B1C2D3E4F5A6B)(NIOCore.NIOAny) -> ()",
         "NIOCore.ChannelHandlerContext.invokeChannelRead(_:)"),
        // A linker stub: the function it jumps to, marked (never a bare `@plt` name).
        ("generic specialization <Swift.Range<Swift.Int>> of Swift.IndexingIterator.next() -> A.Element?@plt",
         "Swift.IndexingIterator.next() (PLT stub)"),
        ("swift_retain@plt", "swift_retain (PLT stub)"),
        // An async function's parts: its name, marked async (never an empty name).
        ("(1) suspend resume partial function for app.Service.handle(request: app.Request) async -> ()",
         "app.Service.handle(request:) (async)"),
        ("(2) await resume partial function for static app.App.main() async throws -> ()", "app.App.main() (async)"),
        ("(1) await resume partial function for partial apply for closure #1 @Sendable () async -> () in app.App.main() async -> ()",
         "closure #1 in app.App.main() (async)"),
        ("(1) await resume partial function for reabstraction thunk helper <A where A: Swift.Sendable> from @escaping @isolated(any) @callee_guaranteed @async () -> (@out A) to @escaping @callee_guaranteed @async () -> (@out A, @error @owned Swift.Error)",
         "reabstraction thunk (async)"),
        ("partial apply forwarder for reabstraction thunk helper <A> from @escaping @isolated(any) () async -> (@out A) to () async -> (@out A)",
         "reabstraction thunk"),
        // Release builds: the optimizer's copies are named after the function they copy.
        ("(2) suspend resume partial function for function signature specialization <Arg[1] = Dead> of static app.AsyncDemo.storeBlob(size: Swift.Int) async -> Swift.Int",
         "app.AsyncDemo.storeBlob(size:) (async)"),
        ("generic specialization <Swift.Int, [Swift.String]> of app.Cache.lookup(_: A) -> B", "app.Cache.lookup(_:)"),
        ("generic specialization <(Swift.Int) -> Swift.Int> of app.apply(_: (A) -> B) -> ()", "app.apply(_:)"),
        ("(1) await resume partial function for function signature specialization <Arg[1] = [Constant Propagated Function : async_Main]> of reabstraction thunk helper from @escaping @convention(thin) @async () -> () to @escaping @callee_guaranteed @async () -> (@out (), @error @owned Swift.Error)",
         "reabstraction thunk (async)"),
        // C++ parameter types with namespaces are not labels.
        ("completeTaskWithClosure(swift::AsyncContext*, swift::SwiftError*)", "completeTaskWithClosure(_:_:)"),
        // Hummingbird's handlers run under generic functions declared in extensions: neither the
        // extension nor the placeholders make a name (seen as `closure #1 in (async)` and ` (async)`).
        ("(1) await resume partial function for closure #1 @Sendable (HummingbirdCore.Request, A.Context) async throws -> HummingbirdCore.Response in (extension in Hummingbird):Hummingbird.RouterMethods.constructResponder<A where A1: Hummingbird.ResponseGenerator>(use: @Sendable (HummingbirdCore.Request, A.Context) async throws -> A1) -> Hummingbird.CallbackResponder<A.Context>",
         "closure #1 in Hummingbird.RouterMethods.constructResponder(use:) (async)"),
        ("(2) await resume partial function for (extension in HummingbirdCore):HummingbirdCore.HTTPChannelHandler.handleHTTP(asyncChannel: NIOCore.NIOAsyncChannel<NIOHTTPTypes.HTTPRequestPart, NIOHTTPTypes.HTTPResponsePart>, logger: Logging.Logger) async -> ()",
         "HummingbirdCore.HTTPChannelHandler.handleHTTP(asyncChannel:logger:) (async)"),
        ("(1) await resume partial function for closure #1 nonisolated(nonsending) () async throws -> A in Logging.withLogger<A, B where B: Swift.Error>(Logging.Logger, nonisolated(nonsending) (Logging.Logger) async throws(B) -> A) async throws(B) -> A",
         "closure #1 in Logging.withLogger(_:_:) (async)"),
        ("(2) await resume partial function for Swift.TaskLocal.withValueImpl<A>(_: __owned A, operation: () async throws -> A1, isolation: isolated Swift.Optional<Swift.Actor>, file: Swift.String, line: Swift.UInt) async throws -> A1",
         "Swift.TaskLocal.withValueImpl(_:operation:isolation:file:line:) (async)"),
        ("(1) await resume partial function for closure #2 @Sendable (HummingbirdCore.Request, Hummingbird.BasicRequestContext) async -> Swift.String in static shop.HummingbirdService.run(shop.HummingbirdService.Options) async throws -> ()",
         "closure #2 in shop.HummingbirdService.run(_:) (async)"),
        // A generic type's arguments stay: they tell one instance from another.
        ("Swift.Array<Swift.Int>.append(__owned Swift.Int) -> ()", "Swift.Array<Swift.Int>.append(_:)"),
        // Folded identical code may be any of several functions: it says so.
        ("merged Swift.Array.append(__owned A) -> ()", "merged Swift.Array.append(_:)"),
    ])
    func shortensDemangledNames(_ full: String, _ short: String) {
        #expect(SymbolName.short(full) == short)
    }

    @Test func neverLosesAnUnbalancedName() {
        #expect(SymbolName.short("weird(name") == "weird(name")
    }
}

@Suite struct FrameNamingFitTests {
    @Test func aLongNameLosesItsLabelsThenItsTypeThenCharacters() {
        #expect(FrameNaming.fit("Pricing.recompute(for:)", width: 40) == "Pricing.recompute(for:)")
        #expect(FrameNaming.fit("Pricing.recompute(for:)", width: 18) == "Pricing.recompute")
        #expect(FrameNaming.fit("Pricing.recompute(for:)", width: 10) == "recompute")
    }

    @Test func theAsyncMarkStays() {
        #expect(FrameNaming.fit("closure #1 in app.runPool(_:mode:) (async)", width: 40) == "closure #1 in app.runPool (async)")
        #expect(FrameNaming.fit("Service.loadProfile(id:) (async)", width: 20).hasSuffix(" (async)"))
    }
}
