import HangWatchReport

/// One monitor's reports on their way to its directory's writer (`SharedReportDirectory`): built
/// by the monitor's own builder (its service, source, signal), named by its enricher and counted in
/// its statistics (`ReportOrigin`), whatever other monitors write to the same directory. The hang
/// lane hands its recordings here, and so does the pool watch when this monitor runs it.
struct MonitorReports: PoolSink {
    let writer: ReportWriter
    let builder: ReportBuilder
    let origin: ReportOrigin

    func hangStarted(_ recording: HangRecording) {
        writer.reportStarted(origin) { [builder] images, outcome in builder.build(recording, images: images, outcome: outcome) }
    }

    func hangProgressed(_ recording: HangRecording) {
        writer.reportProgressed(origin, id: recording.id) { [builder] images, outcome in
            builder.build(recording, images: images, outcome: outcome)
        }
    }

    func hangEnded(_ recording: HangRecording, outcome: HangReport.Outcome) {
        writer.reportEnded(origin, outcome: outcome) { [builder] images, outcome in builder.build(recording, images: images, outcome: outcome) }
    }

    func poolStarved(_ recording: PoolRecording) {
        writer.reportStarted(origin) { [builder] images, outcome in builder.build(pool: recording, images: images, outcome: outcome) }
    }

    func poolProgressed(_ recording: PoolRecording) {
        writer.reportProgressed(origin, id: recording.id) { [builder] images, outcome in
            builder.build(pool: recording, images: images, outcome: outcome)
        }
    }

    func poolRecovered(_ recording: PoolRecording, outcome: HangReport.Outcome) {
        writer.reportEnded(origin, outcome: outcome) { [builder] images, outcome in
            builder.build(pool: recording, images: images, outcome: outcome)
        }
    }
}
