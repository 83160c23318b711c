import Foundation
import HangWatchProfiles
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct SpeedscopeExportTests {
    @Test func sampledProfilesIndexSharedFrames() throws {
        let data = try SpeedscopeExport.render([StackReports.twoStacks, StackReports.report(service: "cart", durationMs: 300, samples: [(250, ["cart.Cart.total()", "main"])])])
        let file = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(file["$schema"] as? String == "https://www.speedscope.app/file-format-schema.json")
        let frames = try #require((file["shared"] as? [String: Any])?["frames"] as? [[String: Any]])
        let names = frames.compactMap { $0["name"] as? String }
        // Each distinct frame (name, file, line) once: billing's "main" is in two of its stacks.
        let keys = frames.map { "\($0["name"] ?? "")|\($0["file"] ?? "")|\($0["line"] ?? "")" }
        #expect(Set(keys).count == keys.count)
        #expect(frames.filter { $0["name"] as? String == "main" && $0["file"] as? String == "/src/billing.swift" }.count == 1)
        let profiles = try #require(file["profiles"] as? [[String: Any]])
        #expect(profiles.count == 2)
        for profile in profiles {
            #expect(profile["type"] as? String == "sampled")
            #expect(profile["unit"] as? String == "milliseconds")
            let samples = try #require(profile["samples"] as? [[Int]])
            let weights = try #require(profile["weights"] as? [Double])
            #expect(samples.count == weights.count)
            #expect(samples.allSatisfy { $0.allSatisfy { $0 >= 0 && $0 < frames.count } })
            #expect(profile["endValue"] as? Double == weights.reduce(0, +))
        }
        let first = try #require(profiles[0]["samples"] as? [[Int]])
        #expect(first[0].map { names[$0] } == ["main", "billing.load()", "Parser.parse()"])
        #expect(profiles[0]["weights"] as? [Double] == [50, 100, 50])
        #expect(profiles[1]["weights"] as? [Double] == [50])
    }

    /// A report file's duration may be 1e300: the profile's name says so instead of trapping.
    @Test func aDurationTooLargeForAnIntIsNamedNotTrappedOn() throws {
        let report = StackReports.report(durationMs: 1e300, samples: [(0, ["main", "f"])])
        let file = try #require(try JSONSerialization.jsonObject(with: SpeedscopeExport.render([report])) as? [String: Any])
        let name = try #require((file["profiles"] as? [[String: Any]])?.first?["name"] as? String)
        #expect(name.hasSuffix(" ms)") && name.contains(" (1000000000000000052504760"), "\(name)")
    }
}
