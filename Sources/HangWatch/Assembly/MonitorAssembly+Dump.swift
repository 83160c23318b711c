import Foundation
import HangWatchReport

extension MonitorAssembly {
    /// The lane that answers `hangwatch dump PID` for this monitor (`DumpServer`, as the world's
    /// `DumpRegistry` admits), when the world takes dumps and, where it says so, the monitor has a
    /// heartbeat (the CLI finds a monitor by its heartbeat file).
    static func dumpLane(
        world: MonitorWorld, owner: Owner, store: ReportStore, builder: ReportBuilder,
        images: ImageRegistry, capture: MonitorWorld.Capture, hasHeartbeat: Bool, stop: StopFlag
    ) -> DumpLane? {
        guard let dumps = world.dumps, hasHeartbeat || !dumps.needHeartbeat else { return nil }
        let server = DumpServer(
            logger: owner.logger, store: store, builder: builder, images: images, clock: world.clock, take: { dumps.take(capture) })
        return DumpLane(owner: owner.id, registry: world.runtime.dumps, server: server, requests: dumps.requests, stop: stop)
    }
}
