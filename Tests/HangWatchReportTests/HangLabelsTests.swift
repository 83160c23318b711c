import HangWatchReport
import Testing

@Suite struct HangLabelsTests {
    @Test func innerKeysWinAndOuterKeysStay() {
        let result = HangLabels.bounded([["route": "GET /checkout", "tenant": "acme"], ["route": "GET /checkout/pay"], [:]])
        #expect(result.labels == ["route": "GET /checkout/pay", "tenant": "acme"])
        #expect(result.omitted == 0)
    }

    @Test func noLabelsIsNone() {
        #expect(HangLabels.bounded([]).labels == nil)
        #expect(HangLabels.bounded([[:], ["": "no key"]]).labels == nil)
    }

    @Test func atMostEightKeepingTheTraceParentThenByKey() throws {
        var set: [String: String] = ["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"]
        for index in 0..<10 { set["k\(index)"] = "\(index)" }
        let result = HangLabels.bounded([set])
        let labels = try #require(result.labels)
        #expect(labels.count == HangLabels.maxCount)
        #expect(labels["traceparent"] != nil)
        #expect(labels.keys.sorted() == ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "traceparent"])
        #expect(result.omitted == 3)
    }

    @Test(arguments: [
        (String(repeating: "a", count: 128), 128, String(repeating: "a", count: 128)),
        (String(repeating: "a", count: 129), 128, String(repeating: "a", count: 125) + "…"),
        // Never half a character: é is two bytes.
        (String(repeating: "é", count: 70), 128, String(repeating: "é", count: 62) + "…"),
        ("short", 4, "s…"),
    ])
    func aLongTextIsCutAndMarked(_ text: String, _ limit: Int, _ expected: String) {
        let cut = HangLabels.cut(text, maxBytes: limit)
        #expect(cut == expected)
        #expect(cut.utf8.count <= limit)
    }

    @Test func keysAndValuesAreBoundedAndOneLine() throws {
        let key = String(repeating: "k", count: 100)
        let labels = try #require(HangLabels.bounded([[key: "line one\nline two", "route": String(repeating: "/x", count: 200)]]).labels)
        let cutKey = String(repeating: "k", count: HangLabels.maxKeyBytes - 3) + "…"
        #expect(labels[cutKey] == "line one\u{FFFD}line two")
        #expect(labels["route"]?.utf8.count ?? 0 <= HangLabels.maxValueBytes)
        #expect(labels["route"]?.hasSuffix("…") == true)
    }
}

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
