import Foundation
import HangWatchReport

extension HangMonitor.Configuration {
    /// The `HANGWATCH_*` keys understood in the environment and in configuration files
    /// (docs/configuration.md says what each sets).
    public static let environmentKeys: [String] = SettingKey.allCases.map(\.rawValue)

    /// Builds a configuration from, in increasing precedence: the defaults, the configuration file
    /// (`configFile`, else `HANGWATCH_CONFIG`), and the `HANGWATCH_*` environment variables.
    /// `serviceName` is used unless `HANGWATCH_SERVICE` overrides it.
    ///
    /// The file has the format of a systemd `EnvironmentFile`: `KEY=VALUE` lines, `#` comments,
    /// optional quotes; the same file can therefore be given to systemd and to this function.
    /// Unknown `HANGWATCH_` keys and invalid values are errors that name the key and the range.
    ///
    /// - Parameters:
    ///   - serviceName: The service's name unless `HANGWATCH_SERVICE` gives one.
    ///   - configFile: A settings file to read; nil reads the one `HANGWATCH_CONFIG` names, if any.
    ///   - environment: The variables to read `HANGWATCH_*` from; the process's own by default.
    /// - Returns: The configuration, checked (``validate()``).
    /// - Throws: ``HangMonitorError/unreadableConfigurationFile(path:reason:)`` when the file cannot
    ///   be read; ``HangMonitorError/invalidConfiguration(key:value:reason:)`` for an unknown
    ///   `HANGWATCH_` key, a value that does not parse, or a setting out of range.
    public static func load(
        serviceName: String, configFile: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> HangMonitor.Configuration {
        var configuration = HangMonitor.Configuration(serviceName: serviceName)
        if let path = configFile ?? environment[SettingKey.configFile.rawValue], !path.isEmpty {
            try configuration.apply(try Self.readSettingsFile(path), origin: path)
        }
        let fromEnvironment = environment.filter { $0.key.hasPrefix("HANGWATCH_") && $0.key != SettingKey.configFile.rawValue }
        try configuration.apply(fromEnvironment.map { (key: $0.key, value: $0.value, line: 0) }, origin: nil)
        try configuration.validate()
        return configuration
    }

    /// Applies `HANGWATCH_*` settings on top of this configuration (a configuration built in code,
    /// overridable from the environment); `HANGWATCH_CONFIG` is not read here.
    ///
    /// - Parameter environment: Variables; those that do not start with `HANGWATCH_` are ignored.
    /// - Returns: A copy with the settings applied, checked (``validate()``).
    /// - Throws: ``HangMonitorError/invalidConfiguration(key:value:reason:)`` for an unknown
    ///   `HANGWATCH_` key, a value that does not parse, or a setting out of range.
    public func applying(environment: [String: String]) throws -> HangMonitor.Configuration {
        var copy = self
        try copy.apply(
            environment.filter { $0.key.hasPrefix("HANGWATCH_") && $0.key != SettingKey.configFile.rawValue }
                .map { (key: $0.key, value: $0.value, line: 0) }, origin: nil)
        try copy.validate()
        return copy
    }

    enum SettingKey: String, CaseIterable {
        case configFile = "HANGWATCH_CONFIG"
        case enabled = "HANGWATCH_ENABLED"
        case service = "HANGWATCH_SERVICE"
        case serviceVersion = "HANGWATCH_SERVICE_VERSION"
        case threshold = "HANGWATCH_THRESHOLD"
        case reportDirectory = "HANGWATCH_REPORT_DIR"
        case sampleInterval = "HANGWATCH_SAMPLE_INTERVAL"
        case maxSamples = "HANGWATCH_MAX_SAMPLES"
        case maxFrames = "HANGWATCH_MAX_FRAMES"
        case busyActivities = "HANGWATCH_BUSY_ACTIVITIES"
        case modes = "HANGWATCH_MODES"
        case captureSignal = "HANGWATCH_CAPTURE_SIGNAL"
        case captureTimeout = "HANGWATCH_CAPTURE_TIMEOUT"
        case startupGrace = "HANGWATCH_STARTUP_GRACE"
        case maxReports = "HANGWATCH_MAX_REPORTS"
        case maxReportBytes = "HANGWATCH_MAX_REPORT_BYTES"
        case reportsPerMinute = "HANGWATCH_REPORTS_PER_MINUTE"
        case reportBurst = "HANGWATCH_REPORT_BURST"
        case repeatWindow = "HANGWATCH_REPEAT_WINDOW"
        case altStackSize = "HANGWATCH_ALTSTACK_SIZE"
        case heartbeatInterval = "HANGWATCH_HEARTBEAT_INTERVAL"
        case agentAccess = "HANGWATCH_AGENT_ACCESS"
        case loopHistogram = "HANGWATCH_LOOP_HISTOGRAM"
        case leadUpWindow = "HANGWATCH_LEAD_UP_WINDOW"
        case concurrencyPool = "HANGWATCH_CONCURRENCY_POOL"
        case queueLooks = "HANGWATCH_QUEUE_LOOKS"
        case ioUring = "HANGWATCH_IO_URING"
        case continueStamp = "HANGWATCH_CONTINUE_STAMP"
    }

    typealias Setting = (key: String, value: String, line: Int)

    static func readSettingsFile(_ path: String) throws -> [Setting] {
        do {
            return try SettingsFile.read(path).map { (key: $0.key, value: $0.value, line: $0.line) }
        } catch let error as SettingsFile.ReadError {
            throw HangMonitorError.unreadableConfigurationFile(path: path, reason: error.reason)
        }
    }

    mutating func apply(_ settings: [Setting], origin: String?) throws {
        for setting in settings {
            let value = SettingValue(
                text: setting.value, keyName: origin.map { "\(setting.key) (\($0):\(setting.line))" } ?? setting.key)
            guard let key = SettingKey(rawValue: setting.key) else {
                let known = SettingKey.allCases.map(\.rawValue).joined(separator: ", ")
                throw value.invalid("unknown setting; known settings are \(known)")
            }
            try apply(key, value)
        }
    }

    /// Sets what `key` names from `value` (throwing the error that names the key, its origin and
    /// what was expected).
    private mutating func apply(_ key: SettingKey, _ value: SettingValue) throws {
        switch key {
        case .configFile: break
        case .enabled: isEnabled = try value.flag()
        case .agentAccess: sharedWithAgent = try value.flag()
        case .loopHistogram: loopHistogram = try value.flag()
        case .concurrencyPool: watchesConcurrencyPool = try value.flag()
        case .queueLooks: looksAtQueueThreads = try value.flag()
        case .ioUring: usesIoUring = try value.flag()
        case .continueStamp: stampsContinueSignal = try value.flag()
        case .service: serviceName = value.text
        case .serviceVersion: serviceVersion = value.text.isEmpty ? nil : value.text
        case .threshold: threshold = try value.duration()
        case .reportDirectory: reportDirectory = value.text
        case .sampleInterval: sampleInterval = try value.duration()
        case .maxSamples: maxSamplesPerHang = try value.integer()
        case .maxFrames: maxFrames = try value.integer()
        case .busyActivities: busyActivities = try value.activities()
        case .modes:
            additionalModes = value.text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        case .captureSignal:
            guard let signal = CaptureSignal.parse(value.text) else {
                throw value.invalid("expected a signal number or SIGRTMIN+N / SIGRTMAX-N")
            }
            captureSignal = signal
        case .captureTimeout: captureTimeout = try value.duration()
        case .startupGrace: startupGracePeriod = try value.duration()
        case .maxReports: maxReports = try value.integer()
        case .maxReportBytes:
            guard let bytes = ByteCountText.parse(value.text) else {
                throw value.invalid("expected a size such as 64MiB, 500KB or 1048576")
            }
            maxReportBytes = bytes
        case .reportsPerMinute: reportsPerMinute = try value.integer()
        case .reportBurst: reportBurst = try value.integer()
        case .repeatWindow: repeatWindow = try value.duration()
        case .heartbeatInterval: heartbeatInterval = try value.duration()
        case .leadUpWindow: leadUpWindow = try value.duration()
        case .altStackSize:
            guard let bytes = ByteCountText.parse(value.text), bytes <= UInt64(Int.max) else {
                throw value.invalid("expected a size such as 64KiB")
            }
            alternateSignalStackSize = Int(bytes)
        }
    }

    /// One setting's text, with the parsers the settings share; their errors name the key (and
    /// the file and line it came from).
    struct SettingValue {
        var text: String
        /// The key as errors name it: `KEY`, or `KEY (file:line)`.
        var keyName: String

        func invalid(_ reason: String) -> HangMonitorError {
            .invalidConfiguration(key: keyName, value: text, reason: reason)
        }

        func flag() throws -> Bool {
            guard let flag = SettingText.boolean(text) else { throw invalid("expected true or false") }
            return flag
        }

        func duration() throws -> Duration {
            guard let parsed = DurationText.parse(text) else {
                throw invalid("expected a duration such as 250ms, 1.5s, 2m or 1m30s")
            }
            return parsed
        }

        func integer() throws -> Int {
            guard let parsed = Int(text.trimmingCharacters(in: .whitespaces)) else {
                throw invalid("expected a whole number")
            }
            return parsed
        }

        /// A comma list of activity names.
        func activities() throws -> Set<HangMonitor.Activity> {
            var activities: Set<HangMonitor.Activity> = []
            for name in text.split(separator: ",") {
                guard let activity = HangMonitor.Activity(name: String(name).trimmingCharacters(in: .whitespaces)) else {
                    let names = HangMonitor.Activity.allCases.map(\.description).joined(separator: ", ")
                    throw invalid("unknown activity \"\(name)\"; use a comma list of \(names)")
                }
                activities.insert(activity)
            }
            return activities
        }
    }
}
