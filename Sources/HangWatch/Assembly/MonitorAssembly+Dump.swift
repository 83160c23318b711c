import Foundation

extension MonitorAssembly {
    /// Answers `hangwatch dump PID` from now on (`DumpServer`, as `DumpAdmission` allows).
    func enrollDumps() {
        DumpRegistry.enroll(
            DumpRegistry.Entry(
                owner: owner.id, wake: watchdog.wake,
                server: DumpServer(configuration: configuration, logger: owner.logger, store: store, builder: builder, images: images)))
    }
}
