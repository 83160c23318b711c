import Foundation
import HangWatchReport
import Logging

/// What `hangwatchd` does and how often. Read from `/etc/hangwatch/hangwatchd.env` (the format of a
/// systemd `EnvironmentFile`, `HANGWATCHD_*` keys, documented line by line in
/// `config/hangwatchd.env`), then command-line overrides. Every value is checked; an invalid one is
/// an error naming the key, where it came from, and the accepted range.
public struct AgentConfiguration: Sendable, Equatable {
    /// The spool: one subdirectory per monitored service.
    var reportRoot = "/var/lib/hangwatch/reports"
    /// Retention: the reports of all services together use at most this many bytes.
    var maxUse: UInt64 = 512 << 20
    /// Retention: delete old reports while the file system has less than this free.
    var keepFree: UInt64 = 1 << 30
    /// Retention: reports older than this are deleted (0: no age limit).
    var maxAge: Duration = .seconds(30 * 86_400)
    /// Retention: at most this many reports per service.
    var maxReportsPerService = 500
    /// How often the whole spool is scanned (changes are also seen at once through inotify).
    var scanInterval: Duration = .seconds(60)
    /// How often provisional reports and heartbeats are checked against the processes.
    var checkInterval: Duration = .seconds(5)
    /// Symbolicate new reports, while their binaries are still on disk.
    var enrich = true
    /// How long a report must be left alone before it is enriched.
    var enrichDelay: Duration = .seconds(2)
    /// Extra places to find binaries and debug files by build-id.
    var debugDirectories: [String] = []
    /// A monitor is flagged when its watchdog has not ticked for twice its interval plus this.
    var heartbeatGrace: Duration = .seconds(5)
    /// The agent watches its own main loop with this threshold (0: not at all).
    var selfThreshold: Duration = .seconds(1)
    /// On SIGTERM, work in progress gets at most this long (keep it below `TimeoutStopSec`).
    var shutdownTimeout: Duration = .seconds(10)
    /// The lowest level logged (`HANGWATCHD_LOG_LEVEL`).
    public var logLevel: Logger.Level = .info

    // Fleet export (docs/fleet.md).
    /// Where the Prometheus endpoint (`/metrics`) listens; nil: no endpoint. Loopback by default:
    /// another host can scrape only when this names a non-loopback address.
    var metricsListen: ListenAddress? = ListenAddress(host: "127.0.0.1", port: 9466)
    /// A hang at least this long is `severity="severe"` (shorter ones are `moderate`; a hang the
    /// process did not survive is `fatal`).
    var severeAfter: Duration = .seconds(2)
    /// The OpenTelemetry collector's OTLP/HTTP base URL (`/v1/logs` and `/v1/metrics` are added);
    /// nil: no OTLP export.
    var otlpEndpoint: String?
    var otlpProtocol: OTLPProtocol = .protobuf
    /// Extra request headers (e.g. an authorization token).
    var otlpHeaders: [Header] = []
    /// Hang log records waiting to be exported, at most; beyond this the oldest are dropped (and
    /// counted in `hangwatch_reports_dropped_total{reason="export"}`).
    var otlpQueueSize = 1000
    /// How often metrics are pushed over OTLP.
    var otlpMetricsInterval: Duration = .seconds(30)

    init() {}

    /// `host:port` (`[v6]:port` for IPv6).
    struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
        var host: String
        var port: Int
        init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
        var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
        var isLoopback: Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }

        /// Parses `127.0.0.1:9466`, `[::1]:9466`, `0.0.0.0:9466`, `localhost:9466` (port 0: any free port).
        static func parse(_ text: String) -> ListenAddress? {
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

    enum OTLPProtocol: String, Sendable, Equatable {
        case protobuf = "http/protobuf"
        case json = "http/json"
    }

    /// One extra OTLP request header.
    struct Header: Sendable, Equatable {
        var name: String
        var value: String
    }

    /// Whether the settings that shape the export pipeline (fixed from start to stop) differ.
    func exportSettingsDiffer(from other: AgentConfiguration) -> Bool {
        metricsListen != other.metricsListen || otlpEndpoint != other.otlpEndpoint || otlpProtocol != other.otlpProtocol
            || otlpHeaders != other.otlpHeaders || otlpQueueSize != other.otlpQueueSize
            || otlpMetricsInterval != other.otlpMetricsInterval
    }

    /// Where the configuration is read from unless another file is named.
    public static let defaultFile = "/etc/hangwatch/hangwatchd.env"

    /// A setting that could not be used.
    struct Invalid: Error, Equatable, CustomStringConvertible {
        var key: String
        var value: String
        var origin: String?
        var reason: String
        var description: String {
            "\(key)\(origin.map { " (\($0))" } ?? "")=\"\(value.prefix(200))\": \(reason)"
        }
    }
}
