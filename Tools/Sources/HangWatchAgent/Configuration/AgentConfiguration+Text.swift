import HangWatchReport

extension AgentConfiguration {
    /// The settings in effect, one `KEY=VALUE` line each in the configuration file's own notation
    /// (sizes as `512MiB`, durations as `30d`), so the text reads back as the same settings
    /// (`hangwatchd --check-config`). Header values are not shown, only their length.
    public var settingsText: String {
        """
        HANGWATCHD_REPORT_ROOT=\(reportRoot)
        HANGWATCHD_MAX_USE=\(Self.sizeText(maxUse))
        HANGWATCHD_KEEP_FREE=\(Self.sizeText(keepFree))
        HANGWATCHD_MAX_AGE=\(DurationText.format(maxAge))
        HANGWATCHD_MAX_REPORTS_PER_SERVICE=\(maxReportsPerService)
        HANGWATCHD_SCAN_INTERVAL=\(DurationText.format(scanInterval))
        HANGWATCHD_CHECK_INTERVAL=\(DurationText.format(checkInterval))
        HANGWATCHD_ENRICH=\(enrich ? "yes" : "no")
        HANGWATCHD_ENRICH_DELAY=\(DurationText.format(enrichDelay))
        HANGWATCHD_DEBUG_DIRS=\(debugDirectories.joined(separator: ":"))
        HANGWATCHD_HEARTBEAT_GRACE=\(DurationText.format(heartbeatGrace))
        HANGWATCHD_SELF_THRESHOLD=\(DurationText.format(selfThreshold))
        HANGWATCHD_SHUTDOWN_TIMEOUT=\(DurationText.format(shutdownTimeout))
        HANGWATCHD_LOG_LEVEL=\(logLevel.rawValue)
        HANGWATCHD_METRICS_LISTEN=\(metricsListen.map { "\($0)" } ?? "off")
        HANGWATCHD_SEVERE_AFTER=\(DurationText.format(severeAfter))
        HANGWATCHD_OTLP_ENDPOINT=\(otlpEndpoint ?? "off")
        HANGWATCHD_OTLP_PROTOCOL=\(otlpProtocol.rawValue)
        HANGWATCHD_OTLP_HEADERS=\(otlpHeaders.map { "\($0.name)=<\($0.value.count) characters>" }.joined(separator: ","))
        HANGWATCHD_OTLP_QUEUE_SIZE=\(otlpQueueSize)
        HANGWATCHD_OTLP_METRICS_INTERVAL=\(DurationText.format(otlpMetricsInterval))
        """
    }

    /// `bytes` in the largest unit that holds it exactly (`512MiB`, `1GiB`, `10MB`), else in bytes.
    /// Only units `ByteCountText` reads back.
    static func sizeText(_ bytes: UInt64) -> String {
        guard bytes > 0 else { return "0" }
        let units: [(String, UInt64)] = [
            ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("GB", 1_000_000_000), ("MB", 1_000_000), ("KB", 1000),
        ]
        for (suffix, scale) in units where bytes % scale == 0 { return "\(bytes / scale)\(suffix)" }
        return "\(bytes)"
    }
}
