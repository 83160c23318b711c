import Foundation
import HangWatchReport
import Logging

/// What `hangwatchd` does and how often. Read from `/etc/hangwatch/hangwatchd.env` (the format of a
/// systemd `EnvironmentFile`, `HANGWATCHD_*` keys, documented line by line in
/// `config/hangwatchd.env`), then command-line overrides. Every value is checked; an invalid one is
/// an error naming the key, where it came from, and the accepted range.
public struct AgentConfiguration: Sendable, Equatable {
    /// The spool: one subdirectory per monitored service.
    public var reportRoot = "/var/lib/hangwatch/reports"
    /// Retention: the reports of all services together use at most this many bytes.
    public var maxUse: UInt64 = 512 << 20
    /// Retention: delete old reports while the file system has less than this free.
    public var keepFree: UInt64 = 1 << 30
    /// Retention: reports older than this are deleted (0: no age limit).
    public var maxAge: Duration = .seconds(30 * 86_400)
    /// Retention: at most this many reports per service.
    public var maxReportsPerService = 500
    /// How often the whole spool is scanned (changes are also seen at once through inotify).
    public var scanInterval: Duration = .seconds(60)
    /// How often provisional reports and heartbeats are checked against the processes.
    public var checkInterval: Duration = .seconds(5)
    /// Symbolicate new reports, while their binaries are still on disk.
    public var enrich = true
    /// How long a report must be left alone before it is enriched.
    public var enrichDelay: Duration = .seconds(2)
    /// Extra places to find binaries and debug files by build-id.
    public var debugDirectories: [String] = []
    /// A monitor is flagged when its watchdog has not ticked for twice its interval plus this.
    public var heartbeatGrace: Duration = .seconds(5)
    /// The agent watches its own main loop with this threshold (0: not at all).
    public var selfThreshold: Duration = .seconds(1)
    /// On SIGTERM, work in progress gets at most this long (keep it below `TimeoutStopSec`).
    public var shutdownTimeout: Duration = .seconds(10)
    public var logLevel: Logger.Level = .info

    // Fleet export (docs/fleet.md).
    /// Where the Prometheus endpoint (`/metrics`) listens; nil: no endpoint. Loopback by default:
    /// another host can scrape only when this names a non-loopback address.
    public var metricsListen: ListenAddress? = ListenAddress(host: "127.0.0.1", port: 9466)
    /// A hang at least this long is `severity="severe"` (shorter ones are `moderate`; a hang the
    /// process did not survive is `fatal`).
    public var severeAfter: Duration = .seconds(2)
    /// The OpenTelemetry collector's OTLP/HTTP base URL (`/v1/logs` and `/v1/metrics` are added);
    /// nil: no OTLP export.
    public var otlpEndpoint: String?
    public var otlpProtocol: OTLPProtocol = .protobuf
    /// Extra request headers (e.g. an authorization token).
    public var otlpHeaders: [Header] = []
    /// Hang log records waiting to be exported, at most; beyond this the oldest are dropped (and
    /// counted in `hangwatch_reports_dropped_total{reason="export"}`).
    public var otlpQueueSize = 1000
    /// How often metrics are pushed over OTLP.
    public var otlpMetricsInterval: Duration = .seconds(30)

    public init() {}

    /// `host:port` (`[v6]:port` for IPv6).
    public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
        public var isLoopback: Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }

        /// Parses `127.0.0.1:9466`, `[::1]:9466`, `0.0.0.0:9466`, `localhost:9466` (port 0: any free port).
        public static func parse(_ text: String) -> ListenAddress? {
            let text = text.trimmingCharacters(in: .whitespaces)
            var host: Substring
            var port: Substring
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
                host = text[text.index(after: text.startIndex)..<close]
                port = text[text.index(close, offsetBy: 2)...]
            } else {
                guard let colon = text.lastIndex(of: ":") else { return nil }
                host = text[..<colon]
                port = text[text.index(after: colon)...]
                if host.contains(":") { return nil }
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || ".:-".contains($0) }),
                let number = Int(port), (0...65_535).contains(number)
            else { return nil }
            return ListenAddress(host: String(host), port: number)
        }
    }

    public enum OTLPProtocol: String, Sendable, Equatable {
        case protobuf = "http/protobuf"
        case json = "http/json"
    }

    /// One extra OTLP request header.
    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    /// Whether the settings that shape the export pipeline (fixed from start to stop) differ.
    public func exportSettingsDiffer(from other: AgentConfiguration) -> Bool {
        metricsListen != other.metricsListen || otlpEndpoint != other.otlpEndpoint || otlpProtocol != other.otlpProtocol
            || otlpHeaders != other.otlpHeaders || otlpQueueSize != other.otlpQueueSize
            || otlpMetricsInterval != other.otlpMetricsInterval
    }

    public static let defaultFile = "/etc/hangwatch/hangwatchd.env"

    /// A setting that could not be used.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var key: String
        public var value: String
        public var origin: String?
        public var reason: String
        public var description: String {
            "\(key)\(origin.map { " (\($0))" } ?? "")=\"\(value.prefix(200))\": \(reason)"
        }
    }

    enum Key: String, CaseIterable {
        case reportRoot = "HANGWATCHD_REPORT_ROOT"
        case maxUse = "HANGWATCHD_MAX_USE"
        case keepFree = "HANGWATCHD_KEEP_FREE"
        case maxAge = "HANGWATCHD_MAX_AGE"
        case maxReportsPerService = "HANGWATCHD_MAX_REPORTS_PER_SERVICE"
        case scanInterval = "HANGWATCHD_SCAN_INTERVAL"
        case checkInterval = "HANGWATCHD_CHECK_INTERVAL"
        case enrich = "HANGWATCHD_ENRICH"
        case enrichDelay = "HANGWATCHD_ENRICH_DELAY"
        case debugDirectories = "HANGWATCHD_DEBUG_DIRS"
        case heartbeatGrace = "HANGWATCHD_HEARTBEAT_GRACE"
        case selfThreshold = "HANGWATCHD_SELF_THRESHOLD"
        case shutdownTimeout = "HANGWATCHD_SHUTDOWN_TIMEOUT"
        case logLevel = "HANGWATCHD_LOG_LEVEL"
        case metricsListen = "HANGWATCHD_METRICS_LISTEN"
        case severeAfter = "HANGWATCHD_SEVERE_AFTER"
        case otlpEndpoint = "HANGWATCHD_OTLP_ENDPOINT"
        case otlpProtocol = "HANGWATCHD_OTLP_PROTOCOL"
        case otlpHeaders = "HANGWATCHD_OTLP_HEADERS"
        case otlpQueueSize = "HANGWATCHD_OTLP_QUEUE_SIZE"
        case otlpMetricsInterval = "HANGWATCHD_OTLP_METRICS_INTERVAL"
    }

    public static var keys: [String] { Key.allCases.map(\.rawValue) }

    /// Defaults, then the file (`path`; the default file may be missing, a named one may not), then
    /// `overrides` (`KEY=VALUE`, from the command line).
    public static func load(file path: String?, overrides: [String], defaultFile: String = AgentConfiguration.defaultFile) throws -> AgentConfiguration {
        var configuration = AgentConfiguration()
        let file = path ?? defaultFile
        if path != nil || FileManager.default.fileExists(atPath: file) {
            let settings: [SettingsFile.Setting]
            do {
                settings = try SettingsFile.read(file)
            } catch {
                throw Invalid(key: "configuration file", value: file, origin: nil, reason: "\(error)")
            }
            for setting in settings {
                try configuration.apply(key: setting.key, value: setting.value, origin: "\(file):\(setting.line)")
            }
        }
        for override in overrides {
            guard let equals = override.firstIndex(of: "=") else {
                throw Invalid(key: override, value: "", origin: "command line", reason: "expected KEY=VALUE")
            }
            try configuration.apply(
                key: String(override[..<equals]), value: String(override[override.index(after: equals)...]),
                origin: "command line")
        }
        try configuration.validate()
        return configuration
    }

    public mutating func apply(key name: String, value: String, origin: String?) throws {
        func invalid(_ reason: String) -> Invalid { Invalid(key: name, value: value, origin: origin, reason: reason) }
        guard let key = Key(rawValue: name) else {
            throw invalid("unknown setting; known settings are \(Self.keys.joined(separator: ", "))")
        }
        func duration(_ range: ClosedRange<Duration>, zeroAllowed: Bool = false) throws -> Duration {
            guard let parsed = DurationText.parse(value) else { throw invalid("expected a duration such as 500ms, 30s, 5m, 12h or 30d") }
            if zeroAllowed && parsed == .zero { return parsed }
            guard range.contains(parsed) else {
                throw invalid("must be \(zeroAllowed ? "0 or " : "")between \(DurationText.format(range.lowerBound)) and \(DurationText.format(range.upperBound))")
            }
            return parsed
        }
        func bytes(_ range: ClosedRange<UInt64>) throws -> UInt64 {
            guard let parsed = ByteCountText.parse(value) else { throw invalid("expected a size such as 512MiB, 2GiB or 1048576") }
            guard range.contains(parsed) else { throw invalid("must be between \(range.lowerBound) and \(range.upperBound) bytes") }
            return parsed
        }
        switch key {
        case .reportRoot:
            guard value.hasPrefix("/"), !value.utf8.contains(0), value.count > 1 else {
                throw invalid("must be an absolute directory path other than /")
            }
            reportRoot = value.hasSuffix("/") ? String(value.dropLast()) : value
        case .maxUse:
            maxUse = try bytes(1 << 20...(1 << 50))
        case .keepFree:
            keepFree = try bytes(0...(1 << 50))
        case .maxAge:
            maxAge = try duration(.seconds(60)...(.seconds(10 * 365 * 86_400)), zeroAllowed: true)
        case .maxReportsPerService:
            guard let count = Int(value.trimmingCharacters(in: .whitespaces)), (1...1_000_000).contains(count) else {
                throw invalid("must be a whole number between 1 and 1000000")
            }
            maxReportsPerService = count
        case .scanInterval:
            scanInterval = try duration(.seconds(1)...(.seconds(86_400)))
        case .checkInterval:
            checkInterval = try duration(.milliseconds(100)...(.seconds(3600)))
        case .enrich:
            guard let flag = SettingText.boolean(value) else { throw invalid("expected yes or no") }
            enrich = flag
        case .enrichDelay:
            enrichDelay = try duration(.zero...(.seconds(3600)))
        case .debugDirectories:
            let directories = value.split(separator: ":").map(String.init).filter { !$0.isEmpty }
            guard directories.allSatisfy({ $0.hasPrefix("/") }) else { throw invalid("a colon-separated list of absolute paths") }
            debugDirectories = directories
        case .heartbeatGrace:
            heartbeatGrace = try duration(.seconds(1)...(.seconds(3600)))
        case .selfThreshold:
            selfThreshold = try duration(.milliseconds(10)...(.seconds(3600)), zeroAllowed: true)
        case .shutdownTimeout:
            shutdownTimeout = try duration(.seconds(1)...(.seconds(600)))
        case .logLevel:
            guard let level = Logger.Level(rawValue: value.trimmingCharacters(in: .whitespaces).lowercased()) else {
                throw invalid("one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            logLevel = level
        case .metricsListen:
            if SettingText.boolean(value) == false || value.trimmingCharacters(in: .whitespaces).isEmpty {
                metricsListen = nil
            } else {
                guard let address = ListenAddress.parse(value) else {
                    throw invalid("expected host:port (127.0.0.1:9466, [::1]:9466, 0.0.0.0:9466) or off")
                }
                metricsListen = address
            }
        case .severeAfter:
            severeAfter = try duration(.milliseconds(1)...(.seconds(3600)))
        case .otlpEndpoint:
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || SettingText.boolean(trimmed) == false {
                otlpEndpoint = nil
            } else {
                guard let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                    let host = url.host, !host.isEmpty, url.query == nil
                else { throw invalid("expected an http:// or https:// URL such as http://127.0.0.1:4318, or off") }
                otlpEndpoint = trimmed.hasSuffix("/") ? String(trimmed.dropLast()) : trimmed
            }
        case .otlpProtocol:
            guard let chosen = OTLPProtocol(rawValue: value.trimmingCharacters(in: .whitespaces).lowercased()) else {
                throw invalid("one of http/protobuf, http/json (gRPC is not built in)")
            }
            otlpProtocol = chosen
        case .otlpHeaders:
            var headers: [Header] = []
            for pair in value.split(separator: ",") where !pair.trimmingCharacters(in: .whitespaces).isEmpty {
                guard let equals = pair.firstIndex(of: "=") else { throw invalid("expected name=value pairs separated by commas") }
                let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
                let headerValue = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) }),
                    !headerValue.contains(where: { $0 == "\r" || $0 == "\n" })
                else { throw invalid("a header name is letters, digits, - and _; values have no line breaks") }
                headers.append(Header(name: name, value: headerValue))
            }
            otlpHeaders = headers
        case .otlpQueueSize:
            guard let count = Int(value.trimmingCharacters(in: .whitespaces)), (1...100_000).contains(count) else {
                throw invalid("must be a whole number between 1 and 100000")
            }
            otlpQueueSize = count
        case .otlpMetricsInterval:
            otlpMetricsInterval = try duration(.seconds(1)...(.seconds(3600)))
        }
    }

    /// Checks what no single setting can: how settings relate.
    public func validate() throws {
        if checkInterval > scanInterval {
            throw Invalid(
                key: Key.checkInterval.rawValue, value: DurationText.format(checkInterval), origin: nil,
                reason: "must not be longer than \(Key.scanInterval.rawValue) (\(DurationText.format(scanInterval)))")
        }
    }
}
