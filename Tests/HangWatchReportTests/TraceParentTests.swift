import HangWatchReport
import Testing

@Suite struct TraceParentTests {
    @Test func readsAValidTraceparent() throws {
        let parent = try #require(TraceParent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
        #expect(parent.traceID == "0af7651916cd43dd8448eb211c80319c")
        #expect(parent.spanID == "b7ad6b7169203331")
        #expect(parent.flags == 1)
        #expect(parent.text == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        #expect(TraceParent("  00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00\t")?.flags == 0)
        // A later version may carry more after the flags.
        #expect(TraceParent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes-next")?.version == 1)
    }

    @Test(arguments: [
        "", "garbage", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",  // version 00 has nothing after the flags
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  // version ff is invalid
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",  // uppercase
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",  // an all-zero trace id
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  // an all-zero span id
        "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",  // not hex
        "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0x",
        "0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\u{00e9}",
        "00-😀af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    ])
    func ignoresWhatIsNotATraceparent(_ text: String) {
        #expect(TraceParent(text) == nil)
    }
}
