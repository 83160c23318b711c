/// Adds information to a finished report before the monitor decides on it and writes it, e.g.
/// symbol names (`HangWatchSymbolication.Symbolicator`, which also sets `nameSignature`: the
/// monitor then folds repeats by names, as readers group them). Called on the report writer's
/// queue, never on the monitored thread and never on the watchdog, once for each finished hang
/// (repeats that are folded included).
public protocol HangReportEnricher: Sendable {
    func enrich(_ report: inout HangReport)
}
