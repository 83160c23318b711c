import Foundation
@_spi(Internal) import HangWatchReport

extension MonitorAssembly {
    /// The name of the file a dump asked for with `nonce` is written to, in the report directory.
    static func dumpFileName(nonce: UInt64) -> String { ".dump-\(nonce).json" }

    /// Answers `hangwatch dump PID` from now on: on a request, the watchdog takes every thread's
    /// state, stack and waits, and writes them as a report (`source` `dump`) to
    /// `.dump-<nonce>.json` in the report directory, with the reports' own permissions.
    func enrollDumps() {
        let (configuration, logger, store, builder, images) = (configuration, owner.logger, store, builder, images)
        DumpRegistry.enroll(
            DumpRegistry.Entry(owner: owner.id, wake: watchdog.wake) { nonce in
                let clock = SystemMonotonicClock()
                let started = clock.microseconds()
                let dump = ProcessDump.take(
                    maxFrames: configuration.maxFrames, timeoutNanoseconds: DurationText.nanoseconds(configuration.captureTimeout),
                    images: images, clock: clock)
                var dumpBuilder = builder
                dumpBuilder.source = .dump
                let report = dumpBuilder.build(dump: dump, id: "dump-\(nonce)", images: images.current)
                let name = Self.dumpFileName(nonce: nonce)
                do {
                    try store.writeAtomically(try report.encoded(), to: store.directory + "/" + name, name: name)
                    logger.info(
                        "thread dump written",
                        metadata: [
                            "hangwatch.path": "\(store.directory)/\(name)", "hangwatch.threads": "\(dump.threads.count)",
                            "hangwatch.took_us": "\(clock.microseconds() - started)",
                        ])
                } catch {
                    logger.warning("thread dump not written", metadata: ["hangwatch.error": "\(error)"])
                }
            })
    }
}
