import Foundation
import HangWatchReport
@testable import HangWatch
import HangWatchTestSupport
import Testing

@Suite struct ConfigurationTests {
    /// config/hangwatch.env documents every key with its default, commented out.
    @Test func theShippedSettingsFileDocumentsEveryKeyWithItsDefault() throws {
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/hangwatch.env").path
        let text = try String(contentsOfFile: shipped, encoding: .utf8)
        for key in HangMonitor.Configuration.environmentKeys where key != "HANGWATCH_CONFIG" {
            #expect(text.contains("#\(key)="), "\(key) is not documented")
        }
        let uncommented = text.split(separator: "\n").filter { $0.hasPrefix("#HANGWATCH_") && !$0.hasPrefix("#HANGWATCH_SERVICE=") }
            .map { String($0.dropFirst()) }.joined(separator: "\n")
        let path = FileManager.default.temporaryDirectory.path + "/hangwatch-shipped-\(getpid()).env"
        try uncommented.write(toFile: path, atomically: true, encoding: .utf8)
        defer { unlink(path) }
        let loaded = try HangMonitor.Configuration.load(serviceName: "svc", configFile: path, environment: [:])
        var expected = HangMonitor.Configuration(serviceName: "svc")
        expected.captureSignal = loaded.captureSignal
        #expect(loaded == expected)
    }

    @Test func defaultsAreValid() throws {
        let configuration = HangMonitor.Configuration(serviceName: "billing")
        try configuration.validate()
        #expect(configuration.threshold == .milliseconds(250))
        #expect(configuration.sampleInterval == .milliseconds(50))
        #expect(configuration.busyActivities == [.beforeSources, .afterWaiting])
        #expect(configuration.reportDirectory == "/var/lib/hangwatch/reports")
    }

    @Test func queueLooksAreOnByDefaultAndCanBeTurnedOff() throws {
        #expect(HangMonitor.Configuration(serviceName: "svc").looksAtQueueThreads)
        let off = try HangMonitor.Configuration.load(serviceName: "svc", environment: ["HANGWATCH_QUEUE_LOOKS": "no"])
        #expect(!off.looksAtQueueThreads)
    }

    @Test func ioUringIsUsedByDefaultAndCanBeTurnedOff() throws {
        #expect(HangMonitor.Configuration(serviceName: "svc").usesIoUring)
        let off = try HangMonitor.Configuration.load(serviceName: "svc", environment: ["HANGWATCH_IO_URING": "no"])
        #expect(!off.usesIoUring)
    }

    @Test func environmentOverridesDefaults() throws {
        let configuration = try HangMonitor.Configuration.load(
            serviceName: "billing",
            environment: [
                "HANGWATCH_THRESHOLD": "1.5s", "HANGWATCH_REPORT_DIR": "/tmp/r", "HANGWATCH_SAMPLE_INTERVAL": "20ms",
                "HANGWATCH_BUSY_ACTIVITIES": "beforeSources, after-waiting, beforeTimers", "HANGWATCH_MAX_REPORT_BYTES": "10MiB",
                "HANGWATCH_CAPTURE_SIGNAL": "SIGRTMIN+3", "HANGWATCH_ENABLED": "false", "HANGWATCH_SERVICE": "payments",
                "PATH": "/usr/bin",
            ])
        #expect(configuration.threshold == .milliseconds(1500))
        #expect(configuration.reportDirectory == "/tmp/r")
        #expect(configuration.sampleInterval == .milliseconds(20))
        #expect(configuration.busyActivities == [.beforeSources, .afterWaiting, .beforeTimers])
        #expect(configuration.maxReportBytes == 10 << 20)
        #expect(configuration.captureSignal == CaptureSignal.realtimeRange.lowerBound + 3)
        #expect(configuration.isEnabled == false)
        #expect(configuration.serviceName == "payments")
    }

    @Test func theFileIsReadAndTheEnvironmentWins() throws {
        let path = FileManager.default.temporaryDirectory.path + "/hangwatch-config-\(getpid()).env"
        let text = """
            # comment
            HANGWATCH_THRESHOLD=400ms
            export HANGWATCH_MAX_REPORTS = "12"
            HANGWATCH_REPORT_DIR='/var/tmp/x'

            """
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        let configuration = try HangMonitor.Configuration.load(
            serviceName: "svc", configFile: path, environment: ["HANGWATCH_MAX_REPORTS": "7"])
        #expect(configuration.threshold == .milliseconds(400))
        #expect(configuration.maxReports == 7)
        #expect(configuration.reportDirectory == "/var/tmp/x")
    }

    @Test(arguments: [
        ("HANGWATCH_THRESHOLD", "fast", "expected a duration"),
        ("HANGWATCH_THRESHOLD", "2ms", "between 10ms and 1h"),
        ("HANGWATCH_MAX_FRAMES", "1000", "between 1 and 256"),
        ("HANGWATCH_BUSY_ACTIVITIES", "beforeWaiting", "cannot be a busy activity"),
        ("HANGWATCH_BUSY_ACTIVITIES", "sometimes", "unknown activity"),
        ("HANGWATCH_CAPTURE_SIGNAL", "9", "real-time signal"),
        ("HANGWATCH_SERVICE", "bad/name", "use 1-64 characters"),
        // Its reports' names would hold "..", which no reader takes for a report.
        ("HANGWATCH_SERVICE", "a..b", "no \"..\""),
        ("HANGWATCH_TRESHOLD", "250ms", "unknown setting"),
        ("HANGWATCH_MAX_REPORT_BYTES", "1KiB", "at least 64 KiB"),
        ("HANGWATCH_ENABLED", "maybe", "expected true or false"),
        ("HANGWATCH_QUEUE_LOOKS", "often", "expected true or false"),
        ("HANGWATCH_IO_URING", "sometimes", "expected true or false"),
    ])
    func rejectsInvalidValuesNamingTheKey(_ key: String, _ value: String, _ reason: String) {
        do {
            _ = try HangMonitor.Configuration.load(serviceName: "svc", environment: [key: value])
            Issue.record("accepted \(key)=\(value)")
        } catch let error as HangMonitorError {
            let message = "\(error)"
            #expect(message.contains(reason), "\(message)")
            #expect(message.contains(key) || message.contains("serviceName") || message.contains("captureSignal")
                || message.contains("threshold") || message.contains("maxFrames") || message.contains("busyActivities")
                || message.contains("maxReportBytes"), "\(message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func aBadFileLineIsNamed() {
        let path = FileManager.default.temporaryDirectory.path + "/hangwatch-bad-\(getpid()).env"
        FileManager.default.createFile(atPath: path, contents: Data("HANGWATCH_THRESHOLD=250ms\njust words\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: HangMonitorError.unreadableConfigurationFile(
            path: path, reason: "line 2: expected KEY=VALUE, found \"just words\"")) {
            try HangMonitor.Configuration.load(serviceName: "svc", configFile: path, environment: [:])
        }
    }

    @Test func aMissingFileIsAnError() {
        #expect(throws: HangMonitorError.self) {
            try HangMonitor.Configuration.load(serviceName: "svc", configFile: "/nonexistent/hw.env", environment: [:])
        }
    }

    @Test func aMonitorRejectsAnInvalidConfiguration() {
        var configuration = HangMonitor.Configuration(serviceName: "svc")
        configuration.sampleInterval = .zero
        #expect(throws: HangMonitorError.self) { try HangMonitor(configuration: configuration) }
    }

    @Test func parsesDurationsAndSizes() {
        #expect(DurationText.parse("250") == .milliseconds(250))
        #expect(DurationText.parse("250ms") == .milliseconds(250))
        #expect(DurationText.parse("1.5s") == .milliseconds(1500))
        #expect(DurationText.parse("2m") == .seconds(120))
        #expect(DurationText.parse("500us") == .microseconds(500))
        #expect(DurationText.parse("-1s") == nil)
        #expect(DurationText.parse("1e300s") == nil)
        #expect(ByteCountText.parse("64KiB") == 65536)
        #expect(ByteCountText.parse("10MB") == 10_000_000)
        #expect(ByteCountText.parse("lots") == nil)
        #expect(DurationText.format(.milliseconds(250)) == "250ms")
        #expect(DurationText.format(.seconds(3600)) == "1h")
    }

    @Test func parsesSignalNames() {
        let range = CaptureSignal.realtimeRange
        #expect(CaptureSignal.parse("SIGRTMIN+7") == range.lowerBound + 7)
        #expect(CaptureSignal.parse("rtmax-1") == range.upperBound - 1)
        #expect(CaptureSignal.parse("40") == 40)
        #expect(CaptureSignal.parse("SIGUSR1") == nil)
    }
}
