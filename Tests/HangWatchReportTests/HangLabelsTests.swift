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
