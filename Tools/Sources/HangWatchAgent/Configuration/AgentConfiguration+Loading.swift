import Foundation
import HangWatchReport
import Logging

extension AgentConfiguration {
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

    static var keys: [String] { Key.allCases.map(\.rawValue) }

    /// Defaults, then the file (`path`; the default file may be missing, a named one may not), then
    /// `overrides` (`KEY=VALUE`, from the command line), every value checked. An invalid setting
    /// is an error whose description names the key, where it was set, and what it accepts.
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

    mutating func apply(key name: String, value: String, origin: String?) throws {
        func invalid(_ reason: String) -> Invalid { Invalid(key: name, value: value, origin: origin, reason: reason) }
        guard let key = Key(rawValue: name) else {
            throw invalid("unknown setting; known settings are \(Self.keys.joined(separator: ", "))")
        }
        func duration(_ range: ClosedRange<Duration>, zeroAllowed: Bool = false) throws -> Duration {
            guard let parsed = DurationText.parse(value) else { throw invalid("expected a duration such as 500ms, 30s, 5m, 12h, 30d or 1d12h") }
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
    func validate() throws {
        if checkInterval > scanInterval {
            throw Invalid(
                key: Key.checkInterval.rawValue, value: DurationText.format(checkInterval), origin: nil,
                reason: "must not be longer than \(Key.scanInterval.rawValue) (\(DurationText.format(scanInterval)))")
        }
    }
}
