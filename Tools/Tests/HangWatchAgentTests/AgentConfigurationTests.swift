import Foundation
import HangWatchReport
import Testing

@testable import HangWatchAgent

@Suite struct AgentConfigurationTests {
    func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/hangwatchd-\(getpid())-\(UUID().uuidString.prefix(6)).env"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func theShippedFileIsTheDefaults() throws {
        // config/hangwatchd.env documents every setting with its default, commented out.
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../config/hangwatchd.env").path
        let text = try String(contentsOfFile: shipped, encoding: .utf8)
        for key in AgentConfiguration.keys { #expect(text.contains("#\(key)="), "\(key) is not documented") }
        let uncommented = text.split(separator: "\n").map { $0.hasPrefix("#HANGWATCHD_") ? String($0.dropFirst()) : "" }.joined(separator: "\n")
        let parsed = try AgentConfiguration.load(file: try file(uncommented), overrides: [])
        #expect(parsed == AgentConfiguration())
    }

    @Test func fileThenCommandLine() throws {
        let path = try file("HANGWATCHD_MAX_USE=64MiB\nHANGWATCHD_MAX_AGE=7d\n# comment\nHANGWATCHD_ENRICH=no\n")
        let configuration = try AgentConfiguration.load(file: path, overrides: ["HANGWATCHD_MAX_USE=128MiB", "HANGWATCHD_DEBUG_DIRS=/a:/b"])
        #expect(configuration.maxUse == 128 << 20)
        #expect(configuration.maxAge == .seconds(7 * 86_400))
        #expect(configuration.enrich == false)
        #expect(configuration.debugDirectories == ["/a", "/b"])
    }

    @Test(arguments: [
        ("HANGWATCHD_MAX_USE=12", "between 1048576 and"),
        ("HANGWATCHD_MAX_AGE=5s", "0 or between 1m and 3650d"),
        ("HANGWATCHD_MAX_AGE=forever", "expected a duration"),
        ("HANGWATCHD_MAX_REPORTS_PER_SERVICE=0", "between 1 and 1000000"),
        ("HANGWATCHD_CHECK_INTERVAL=10ms", "between 100ms and 1h"),
        ("HANGWATCHD_ENRICH=maybe", "expected yes or no"),
        ("HANGWATCHD_REPORT_ROOT=relative/path", "absolute directory path"),
        ("HANGWATCHD_DEBUG_DIRS=/ok:relative", "absolute paths"),
        ("HANGWATCHD_LOG_LEVEL=loud", "one of trace, debug"),
        ("HANGWATCHD_TYPO=1", "unknown setting"),
    ])
    func everyBadValueIsNamedWithItsPlaceAndRange(_ line: String, _ reason: String) throws {
        let path = try file("# first line\n" + line + "\n")
        do {
            _ = try AgentConfiguration.load(file: path, overrides: [])
            Issue.record("accepted \(line)")
        } catch let error as AgentConfiguration.Invalid {
            let key = String(line.prefix { $0 != "=" })
            #expect(error.key == key)
            #expect(error.origin == "\(path):2")
            #expect("\(error)".contains(reason), "\(error)")
        }
    }

    /// Durations as systemd and journalctl write them: several terms added up.
    @Test func compoundDurationsAreAccepted() throws {
        let configuration = try AgentConfiguration.load(
            file: nil, overrides: ["HANGWATCHD_MAX_AGE=1d12h", "HANGWATCHD_CHECK_INTERVAL=1m30s", "HANGWATCHD_SCAN_INTERVAL=2m"], defaultFile: "/nonexistent")
        #expect(configuration.maxAge == .seconds(36 * 3600))
        #expect(configuration.checkInterval == .seconds(90))
    }

    @Test func settingsThatContradictEachOtherAreRejected() {
        #expect(throws: AgentConfiguration.Invalid.self) {
            try AgentConfiguration.load(file: nil, overrides: ["HANGWATCHD_SCAN_INTERVAL=10s", "HANGWATCHD_CHECK_INTERVAL=20s"], defaultFile: "/nonexistent")
        }
    }

    @Test func aMissingDefaultFileMeansDefaultsButANamedOneMustExist() throws {
        #expect(try AgentConfiguration.load(file: nil, overrides: [], defaultFile: "/nonexistent/hangwatchd.env") == AgentConfiguration())
        #expect(throws: AgentConfiguration.Invalid.self) { try AgentConfiguration.load(file: "/nonexistent/hangwatchd.env", overrides: []) }
        #expect(throws: AgentConfiguration.Invalid.self) { try AgentConfiguration.load(file: nil, overrides: ["no equals sign"], defaultFile: "/x") }
    }

    @Test func listenAddressesParseAndBadOnesAreRefused() throws {
        #expect(AgentConfiguration.ListenAddress.parse("127.0.0.1:9466") == .init(host: "127.0.0.1", port: 9466))
        #expect(AgentConfiguration.ListenAddress.parse("[::1]:9000") == .init(host: "::1", port: 9000))
        #expect(AgentConfiguration.ListenAddress.parse("0.0.0.0:9466")?.isLoopback == false)
        for bad in ["9466", "host:", "host:70000", "::1:9466", "a b:1", "[::1]9466"] {
            #expect(AgentConfiguration.ListenAddress.parse(bad) == nil, "\(bad)")
        }
        let off = try AgentConfiguration.load(file: nil, overrides: ["HANGWATCHD_METRICS_LISTEN=off"], defaultFile: "/nonexistent/hangwatchd.env")
        #expect(off.metricsListen == nil)
        #expect(throws: AgentConfiguration.Invalid.self) {
            try AgentConfiguration.load(file: nil, overrides: ["HANGWATCHD_METRICS_LISTEN=localhost"], defaultFile: "/nonexistent/hangwatchd.env")
        }
    }

    @Test func otlpSettingsAreChecked() throws {
        let configuration = try AgentConfiguration.load(
            file: nil,
            overrides: [
                "HANGWATCHD_OTLP_ENDPOINT=http://collector:4318/", "HANGWATCHD_OTLP_PROTOCOL=http/json",
                "HANGWATCHD_OTLP_HEADERS=authorization=Bearer abc, x-tenant=7", "HANGWATCHD_OTLP_QUEUE_SIZE=50",
            ], defaultFile: "/nonexistent/hangwatchd.env")
        #expect(configuration.otlpEndpoint == "http://collector:4318")
        #expect(configuration.otlpProtocol == .json)
        #expect(configuration.otlpHeaders == [.init(name: "authorization", value: "Bearer abc"), .init(name: "x-tenant", value: "7")])
        #expect(configuration.otlpQueueSize == 50)
        for bad in [
            "HANGWATCHD_OTLP_ENDPOINT=collector:4318", "HANGWATCHD_OTLP_ENDPOINT=ftp://x", "HANGWATCHD_OTLP_PROTOCOL=grpc",
            "HANGWATCHD_OTLP_HEADERS=novalue", "HANGWATCHD_OTLP_QUEUE_SIZE=0", "HANGWATCHD_SEVERE_AFTER=0",
        ] {
            #expect(throws: AgentConfiguration.Invalid.self, "\(bad)") { try AgentConfiguration.load(file: nil, overrides: [bad], defaultFile: "/nonexistent/hangwatchd.env") }
        }
    }

    @Test func sizesAreWrittenInTheLargestUnitThatHoldsThemExactly() {
        let cases: [(UInt64, String)] = [
            (0, "0"), (1, "1"), (1023, "1023"), (1024, "1KiB"), (1536 << 10, "1536KiB"), (512 << 20, "512MiB"), (1 << 30, "1GiB"),
            (1 << 50, "1048576GiB"), (10_000_000, "10MB"), (1000, "1KB"), (3 * 1_000_000_000, "3GB"), (1_048_577, "1048577"),
        ]
        for (bytes, text) in cases {
            #expect(AgentConfiguration.sizeText(bytes) == text, "\(bytes)")
            #expect(ByteCountText.parse(text) == bytes, "\(text) reads back")
        }
    }

    @Test func theSettingsTextReadsBackAsTheSameSettings() throws {
        let configuration = try AgentConfiguration.load(
            file: nil,
            overrides: [
                "HANGWATCHD_MAX_USE=64MiB", "HANGWATCHD_MAX_AGE=7d", "HANGWATCHD_DEBUG_DIRS=/a:/b", "HANGWATCHD_OTLP_ENDPOINT=http://c:4318",
                "HANGWATCHD_LOG_LEVEL=debug", "HANGWATCHD_SELF_THRESHOLD=0",
            ], defaultFile: "/nonexistent/hangwatchd.env")
        let path = try file(configuration.settingsText + "\n")
        #expect(try AgentConfiguration.load(file: path, overrides: []) == configuration)
        #expect(configuration.settingsText.split(separator: "\n").count == AgentConfiguration.keys.count)
    }
}
