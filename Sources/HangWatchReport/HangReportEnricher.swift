/// Adds information to a finished report before it is written, e.g. symbol names
/// (`HangWatchSymbolication.Symbolicator`). Called on the report writer's queue, never on the
/// monitored thread and never on the watchdog.
public protocol HangReportEnricher: Sendable {
    func enrich(_ report: inout HangReport)
}
