import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// One problem, one group, across releases: the same service built twice, the second time with
/// unrelated code added before its hang sites (every address moves) and one new site, each build
/// hanging at the sites they share, gives `hangwatch top` one group per site over both builds'
/// reports, from the names written into them while the binaries existed (the first build's binary
/// deleted before `top` runs), and never one group for two sites. Run as releases 1.0.0 and 1.1.0
/// (`OTEL_RESOURCE_ATTRIBUTES`), every report names its release, and `hangwatch diff 1.0.0 1.1.0`
/// marks exactly the new site `new` and every shared one `same`. (`hangwatch-rebuild-shop`,
/// Tools/Sources/hangwatch-rebuild-shop.)
@Suite(.serialized) struct RebuildGroupingTests {
    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    /// The sites (Sites.swift): the function each site's heaviest stack names.
    static let sites = ["Quotes.refresh()", "Checkout.total()", "Audit.flush()", "Cache.waitForLock()", "Inventory.scan()"]
    /// The site only the second build has (Coupons.swift).
    static let newSite = "Coupons.apply()"
    static let releases = ["1.0.0", "1.1.0"]

    struct Group: Decodable {
        var signature: String
        var signatureKind: HangReport.SignatureKind?
        var count: Int
        var representative: String
    }

    /// Runs `hangwatch arguments…` with a cache of the test's own.
    static func hangwatch(_ arguments: [String], cache: String) throws -> CommandResult {
        try ExecutableRun.run(BuiltExecutable.path("hangwatch"), arguments, environment: ["XDG_CACHE_HOME": cache, "COLUMNS": "200"], timeout: 120)
    }

    /// The site whose function `report`'s heaviest stack runs (named), or nil.
    static func site(of report: HangReport) -> String? {
        let names = (report.heaviestStack?.frames ?? []).compactMap(\.symbol).map { FrameNaming.displayName(HangReport.Frame(address: "0x0", image: nil, offset: nil, symbol: $0), images: []) }
        return (sites + [newSite]).first { site in names.contains { $0 == site || $0 == site + " (async)" } }
    }

    @Test func twoBuildsWhoseAddressesAllMovedGiveOneGroupPerSite() throws {
        let first = BuiltExecutable.path("hangwatch-rebuild-shop")
        try #require(FileManager.default.isExecutableFile(atPath: first), "\(first) is not built (swift build --build-tests)")
        // The second build: the same sources plus Padding.swift's code, in a build directory of its own.
        let built = try ExecutableRun.run(
            "/usr/bin/env",
            ["swift", "build", "--package-path", Self.tools, "--product", "hangwatch-rebuild-shop", "--scratch-path", Self.tools + "/.build-rebuild"],
            environment: ["HANGWATCH_REBUILD_VARIANT": "2"], timeout: 1800)
        try #require(built.status == 0, "the second build failed: \(built.output)\(built.errors)")
        let second = Self.tools + "/.build-rebuild/debug/hangwatch-rebuild-shop"

        let scratch = FileManager.default.temporaryDirectory.path + "/hangwatch-rebuild-\(getpid())-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // Each build installed where a deploy puts it, and run.
        var reportsByBuild: [[HangReport]] = []
        for (build, binary) in [first, second].enumerated() {
            let installed = scratch + "/release-\(build + 1)/hangwatch-rebuild-shop"
            try FileManager.default.createDirectory(atPath: scratch + "/release-\(build + 1)", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: binary, toPath: installed)
            let directory = scratch + "/reports/build-\(build + 1)"
            let run = try ExecutableRun.run(
                installed, ["--reports", directory],
                environment: ["OTEL_RESOURCE_ATTRIBUTES": "service.name=rebuild-shop,service.version=\(Self.releases[build])"], timeout: 120)
            try #require(run.status == 0, "build \(build + 1): \(run.output)\(run.errors)")
            // Names written into every report while the binary is there (what the agent does).
            let files = try ReportStore(directory: directory).list()
            let expected = Self.sites.count + build  // the second build's new site
            try #require(files.count == expected, "build \(build + 1): \(files.count) reports; \(run.output)")
            for file in files {
                let named = try Self.hangwatch(["symbolicate", file.path], cache: scratch + "/cache")
                #expect(named.status == 0, "\(named.output)\(named.errors)")
            }
            reportsByBuild.append(try files.map { try ReportReader().read(path: $0.path) })
        }
        // The first build is gone (a redeploy replaced it).
        try FileManager.default.removeItem(atPath: scratch + "/release-1")

        // The premise: the same sites (and the new one in the second), every address moved (no
        // address signature in common); each report names its release.
        for (build, reports) in reportsByBuild.enumerated() {
            #expect(
                Set(reports.compactMap(Self.site)) == Set(Self.sites + (build == 1 ? [Self.newSite] : [])),
                "\(reports.map { $0.heaviestStack?.frames.compactMap(\.symbol).prefix(3) ?? [] })")
            #expect(reports.allSatisfy { $0.nameSignature != nil && $0.repeats?.count == 1 })
            #expect(
                reports.allSatisfy { $0.serviceVersion == ServiceVersion(version: Self.releases[build], source: .openTelemetry) },
                "\(reports.map(\.serviceVersion))")
        }
        let addressSignatures = reportsByBuild.map { Set($0.map(\.signature)) }
        #expect(addressSignatures[0].isDisjoint(with: addressSignatures[1]), "\(addressSignatures)")
        for site in Self.sites {
            let offsets = reportsByBuild.map { reports in reports.first { Self.site(of: $0) == site }?.heaviestStack?.frames.filter { $0.image == 0 }.compactMap(\.offset) }
            #expect(offsets[0] != nil && offsets[1] != nil && Set(offsets[0]!).isDisjoint(with: offsets[1]!), "\(site): \(offsets)")
        }

        // One group per site, by names, each with both builds' hangs (2 each, one folded).
        let top = try Self.hangwatch(["top", "--dir", scratch + "/reports", "--json", "--limit", "100"], cache: scratch + "/cache")
        try #require(top.status == 0, "\(top.errors)")
        let groups = try HangReport.makeDecoder().decode([Group].self, from: Data(top.output.utf8))
        #expect(groups.count == Self.sites.count + 1, "\(groups.map(\.signature))")
        #expect(
            groups.allSatisfy { $0.signatureKind == .names && ($0.count == 4 || $0.count == 2) } && groups.filter { $0.count == 2 }.count == 1,
            "\(groups.map { ($0.signatureKind, $0.count) })")
        // Never two sites in one group: every report's group is its site's alone.
        let all = reportsByBuild.flatMap { $0 }
        var siteOfGroup: [String: String] = [:]
        for report in all {
            let site = try #require(Self.site(of: report))
            let signature = report.grouping.signature
            #expect(siteOfGroup[signature, default: site] == site, "\(signature): \(siteOfGroup[signature] ?? "") and \(site)")
            siteOfGroup[signature] = site
        }
        #expect(Set(siteOfGroup.keys) == Set(groups.map(\.signature)))
        #expect(Set(siteOfGroup.values) == Set(Self.sites + [Self.newSite]))
        let text = try Self.hangwatch(["top", "--dir", scratch + "/reports", "--limit", "100"], cache: scratch + "/cache")
        #expect(
            text.lines.filter { $0.hasPrefix("#") }.allSatisfy { $0.hasSuffix("(names)") && ($0.contains("4 hangs") || $0.contains("2 hangs")) },
            "\(text.output)")

        // What release 1.1.0 brought: the new site, and nothing else changed.
        struct Diff: Decodable {
            struct Group: Decodable {
                struct Count: Decodable { var count: Int }
                var status: String
                var signature: String
                var from, to: Count
            }
            var comparedBy: String
            var groups: [Group]
        }
        let diffed = try Self.hangwatch(["diff", "1.0.0", "1.1.0", "--dir", scratch + "/reports", "--json"], cache: scratch + "/cache")
        try #require(diffed.status == 0, "\(diffed.errors)")
        let diff = try JSONDecoder().decode(Diff.self, from: Data(diffed.output.utf8))
        let newSignature = try #require(siteOfGroup.first { $0.value == Self.newSite }?.key)
        #expect(diff.groups.count == Self.sites.count + 1, "\(diffed.output)")
        #expect(diff.groups.filter { $0.status == "new" }.map(\.signature) == [newSignature], "\(diffed.output)")
        #expect(diff.groups.filter { $0.status != "new" }.allSatisfy { $0.status == "same" && $0.from.count == 2 && $0.to.count == 2 }, "\(diffed.output)")
        #expect(diff.comparedBy == "counts", "no agent recorded monitored time here")
        let shown = try Self.hangwatch(["diff", "1.0.0", "1.1.0", "--dir", scratch + "/reports"], cache: scratch + "/cache")
        #expect(shown.status == 0 && shown.lines.filter { $0.hasPrefix("new") }.count == 1, "\(shown.output)")
        #expect(shown.lines.filter { $0.hasPrefix("same") }.count == Self.sites.count, "\(shown.output)")
        print("[rebuild] \(all.count) reports, \(groups.count) groups by names for \(Self.sites.count) sites; by addresses they would be \(Set(all.map(\.signature)).count)")
    }
}
