import Foundation
@testable import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct ServiceVersionTests {
    /// The configuration, then HANGWATCH_SERVICE_VERSION, then OTEL_RESOURCE_ATTRIBUTES, then the
    /// build-id: each source is used only when the ones before it say nothing.
    @Test func theFirstSourceThatSaysSomethingWins() {
        let otel = ["OTEL_RESOURCE_ATTRIBUTES": "service.name=billing,service.version=1.1.0"]
        let both = otel.merging(["HANGWATCH_SERVICE_VERSION": "2.0.0"]) { $1 }
        let buildID = { Optional("8f1e2d3c4b5a69788796a5b4c3d2e1f0aabbccdd") }
        #expect(ServiceVersion.resolve(configured: "3.0.0", environment: both, buildID: buildID) == ServiceVersion(version: "3.0.0", source: .configuration))
        #expect(ServiceVersion.resolve(configured: nil, environment: both, buildID: buildID) == ServiceVersion(version: "2.0.0", source: .environment))
        #expect(ServiceVersion.resolve(configured: "  ", environment: otel, buildID: buildID) == ServiceVersion(version: "1.1.0", source: .openTelemetry))
        #expect(
            ServiceVersion.resolve(configured: nil, environment: ["HANGWATCH_SERVICE_VERSION": ""], buildID: buildID)
                == ServiceVersion(version: "build-8f1e2d3c4b5a", source: .buildID))
        #expect(ServiceVersion.resolve(configured: nil, environment: [:], buildID: { nil }) == nil)
    }

    @Test(arguments: [
        ("service.version=1.0.0", "1.0.0"),
        (" service.name = billing , service.version = 1.0.0 ", "1.0.0"),
        ("service.version=1.0.0,service.version=1.0.1", "1.0.1"),  // the later pair wins
        ("service.version=2.0%2Bbuild.7", "2.0+build.7"),  // percent-encoded
        ("service.version=r%C3%A9sum%C3%A9", "résumé"),
        ("service.version=100%", "100%"),  // not a valid escape: kept as written
        ("deployment.environment=prod", nil),
        ("service.version", nil),  // no `=`
        ("=1.0.0,,service.version=", nil),
        ("", nil),
    ] as [(String, String?)])
    func readsOpenTelemetrysResourceAttributes(text: String, version: String?) {
        let resolved = ServiceVersion.resolve(configured: nil, environment: ["OTEL_RESOURCE_ATTRIBUTES": text], buildID: { nil })
        #expect(resolved?.version == version, "\(text)")
        #expect(resolved.map { $0.source == .openTelemetry } ?? true)
    }

    /// A version fits the heartbeat's 64-byte field, is cut at a character (never inside one) and
    /// carries no control characters (it is printed and used as a label).
    @Test func aVersionIsBoundedAndPrintable() {
        let long = ServiceVersion(version: String(repeating: "é", count: 40), source: .configuration)
        #expect(long.version.utf8.count == 64 && long.version == String(repeating: "é", count: 32))
        let odd = ServiceVersion(version: String(repeating: "a", count: 63) + "é", source: .configuration)
        #expect(odd.version == String(repeating: "a", count: 63))
        #expect(ServiceVersion(version: "1.0\n.0\u{7f}\t", source: .configuration).version == "1.0.0")
    }

    @Test func aReportCarriesItsVersionAndOlderReportsReadWithout() throws {
        var report = ReportFixtures.report()
        report.serviceVersion = ServiceVersion(version: "1.1.0", source: .openTelemetry)
        let object = try #require(try JSONSerialization.jsonObject(with: report.encoded()) as? [String: Any])
        #expect(object["serviceVersion"] as? [String: String] == ["version": "1.1.0", "source": "OTEL_RESOURCE_ATTRIBUTES"])
        #expect(try HangReport.decode(report.encoded()).serviceVersion == report.serviceVersion)
        #expect(try HangReport.decode(ReportFixtures.report().encoded()).serviceVersion == nil)
    }
}

@Suite struct MonitoredTimeTests {
    @Test func secondsAddUpPerVersionAndTheFileRoundTrips() throws {
        var time = MonitoredTime()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        time.add(30, to: "1.0.0", at: now)
        time.add(12.5, to: "1.0.0", at: now.addingTimeInterval(30))
        time.add(5, to: "1.1.0", at: now)
        for nonsense in [0, -3, .nan, .infinity] { time.add(nonsense, to: "1.1.0", at: now) }
        #expect(time.seconds(of: "1.0.0") == 42.5 && time.seconds(of: "1.1.0") == 5 && time.seconds(of: "2.0.0") == 0)
        #expect(time.versions["1.0.0"]?.lastSeen == now.addingTimeInterval(30))
        #expect(MonitoredTime.decode(try time.encoded()) == time)
    }

    @Test func theVersionSeenLongestAgoGoesPastTheBound() {
        var time = MonitoredTime()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for index in 0...MonitoredTime.maxVersions { time.add(1, to: "v\(index)", at: start.addingTimeInterval(Double(index))) }
        #expect(time.versions.count == MonitoredTime.maxVersions)
        #expect(time.versions["v0"] == nil && time.versions["v\(MonitoredTime.maxVersions)"] != nil)
    }

    /// A damaged or foreign file is no time at all, never a wrong one.
    @Test(arguments: [
        "", "{}", "not json", #"{"schema":"hangwatch.monitored-time/2","versions":{}}"#,
        #"{"schema":"hangwatch.monitored-time/1","versions":{"1.0":{"seconds":-1,"lastSeen":"2027-01-15T08:00:00.000Z"}}}"#,
        #"{"schema":"hangwatch.monitored-time/1","versions":{"1.0":{"seconds":"many","lastSeen":"2027-01-15T08:00:00.000Z"}}}"#,
    ])
    func aDamagedFileIsNoTime(text: String) {
        #expect(MonitoredTime.decode(Data(text.utf8)) == nil)
    }
}
