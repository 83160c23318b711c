import HangWatchReport
import Testing

@Suite struct SignatureNameTests {
    /// What one function is called in one build and another: the same name.
    @Test(arguments: [
        // An async function's parts and its entry are the function.
        ("(2) await resume partial function for app.Service.loadProfile(id: Swift.Int) async -> Swift.Int", "app.Service.loadProfile(id:)"),
        ("(1) suspend resume partial function for app.Service.loadProfile(id: Swift.Int) async -> Swift.Int", "app.Service.loadProfile(id:)"),
        ("app.Service.loadProfile(id: Swift.Int) async -> Swift.Int", "app.Service.loadProfile(id:)"),
        // The optimizer's copies.
        ("generic specialization <Swift.Int, [Swift.String]> of app.Cache.lookup(_: A) -> B", "app.Cache.lookup(_:)"),
        ("function signature specialization <Arg[1] = Dead> of static app.AsyncDemo.storeBlob(size: Swift.Int) async -> Swift.Int",
         "app.AsyncDemo.storeBlob(size:)"),
        ("(1) await resume partial function for function signature specialization <Arg[0] = Owned To Guaranteed> of app.f() async -> ()", "app.f()"),
        ("merged app.Pricing.recompute(for: Swift.Int) -> Swift.UInt64", "app.Pricing.recompute(for:)"),
        ("static app.Pricing.recompute(for: Swift.Int) -> Swift.UInt64", "app.Pricing.recompute(for:)"),
        ("dispatch thunk of app.Store.load() -> ()", "app.Store.load()"),
        ("@objc Foundation.__NSFireTimer(_: Swift.Optional<__C.CFRunLoopTimerRef>, info: Swift.Optional<Swift.UnsafeMutableRawPointer>) -> ()",
         "Foundation.__NSFireTimer(_:info:)"),
        ("partial apply for closure #1 () -> () in app.main() -> ()", "closure #1 in app.main()"),
        // Closures keep their numbers (two closures of one function are two call paths), not their types.
        ("closure #1 @Sendable (Foundation.Timer) -> () in closure #2 @Sendable () -> () in main", "closure #1 in closure #2 in main"),
        ("(1) suspend resume partial function for closure #3 @Sendable () async -> () in app.Server.run() async throws -> ()",
         "closure #3 in app.Server.run()"),
        // A private function's file discriminator goes (it is the file's, and stays; the name says enough).
        ("app.Worker.(drain in _9A0B1C2D3E4F5A6B)() -> ()", "app.Worker.drain()"),
        // A protocol witness is the method it runs.
        ("protocol witness for app.Handler.handle(request: app.Request) -> () in conformance app.CheckoutHandler : app.Handler in app",
         "app.CheckoutHandler.handle(request:)"),
        // C: symbol versions and the compilers' clones.
        ("pthread_mutex_lock@@GLIBC_2.2.5", "pthread_mutex_lock"),
        ("compute_row.constprop.0", "compute_row"),
        ("hash_block.cold", "hash_block"),
        ("render.llvm.8274920384710293847", "render"),
        ("g.isra.0.part.1", "g"),
        ("foo::bar(int, char const*)", "foo::bar(_:_:)"),
    ])
    func namesWhatStaysTheSame(_ symbol: String, _ expected: String) {
        #expect(SignatureName.normalize(symbol) == expected)
    }

    /// Glue that one build has and another not: never counted.
    @Test(arguments: [
        "reabstraction thunk helper from @escaping @callee_guaranteed () -> () to @escaping @callee_unowned @convention(block) () -> ()",
        "(1) await resume partial function for reabstraction thunk helper <A where A: Swift.Sendable> from @escaping @isolated(any) @callee_guaranteed @async () -> (@out A) to @escaping @callee_guaranteed @async () -> (@out A, @error @owned Swift.Error)",
        "partial apply forwarder for reabstraction thunk helper <A> from @escaping @isolated(any) () async -> (@out A) to () async -> (@out A)",
        "thunk for @escaping @callee_guaranteed () -> ()",
        "outlined copy of app.State",
        "outlined destroy of app.Request",
        "usleep@plt",
        "swift_retain@plt",
        "PLT stub",
    ])
    func glueIsNotCounted(_ symbol: String) {
        #expect(SignatureName.normalize(symbol) == nil)
    }

    @Test func twoClosuresOfOneFunctionAreTwoNames() {
        #expect(SignatureName.normalize("closure #1 () -> () in app.f() -> ()") != SignatureName.normalize("closure #2 () -> () in app.f() -> ()"))
    }
}
