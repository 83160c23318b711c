import Dispatch

/// The report writer's one timed duty as a lane of the watchdog: a report the rate limit holds
/// until a token comes is written when it comes. The lane rests while nothing is held (the writer
/// posts the watchdog's wake when that changes), waits for the time the writer names, then asks
/// it to write (`ReportWriter.writeHeldReports(now:)`). A monitor's start enlists one; monitors
/// sharing a writer each have one, and whichever steps first at the due time writes.
final class ReportHoldBackLane: WatchdogLane {
    private let writer: ReportWriter
    private let stop: StopFlag
    let finished = DispatchSemaphore(value: 0)

    init(writer: ReportWriter, stop: StopFlag) {
        self.writer = writer
        self.stop = stop
    }

    func advance(_ turn: WatchdogTurn) -> WatchdogWait {
        // (At a stop, the writer's flush writes what is still held.)
        guard !stop.isRaised else { return .finished }
        guard let due = writer.heldReportsDue else { return .rest(until: nil) }
        let now = turn.environment.now()
        guard due <= now else { return .at(due) }
        writer.writeHeldReports(now: now)
        return .rest(until: nil)
    }
}
