import Foundation
@_spi(Internal) import HangWatchReport
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Keeps each service directory's `.monitored-time.json` (`MonitoredTime`): the seconds live
/// monitors watched it, per version, across agent restarts. What `MonitorWatch` counted since the
/// last write is added to the file at most once a `flushInterval` per service (the first time at
/// once), and whatever is left when the agent stops. A crash loses at most that interval.
///
/// The file is the agent's: read without following a symlink, at most `maxBytes`; one that is not
/// such a file (damaged, or planted) is replaced, with a warning, by what the agent counts from
/// then on. It is written whole or not at all (`ReportStore.writeAtomically`), mode 0644: the
/// CLI run by the service's user reads it.
final class MonitoredTimeKeeper {
    let spool: Spool
    let logger: Logger
    static let flushInterval: UInt64 = 60_000_000_000
    static let maxBytes = 64 << 10

    /// The part of each release's running total already in its file.
    private var written: [ServiceRelease: Double] = [:]
    /// When each service's file was last written (agent monotonic ns).
    private var flushedAt: [String: UInt64] = [:]

    init(spool: Spool, logger: Logger) {
        self.spool = spool
        self.logger = logger
    }

    /// Adds what `totals` (running totals since the agent started) hold beyond what was written,
    /// for the services whose interval has passed (all of them with `force`).
    func flush(_ totals: [ServiceRelease: Double], nowMonotonic: UInt64, now: Date, force: Bool = false) {
        var pending: [String: [String: Double]] = [:]
        for (release, total) in totals {
            let added = total - (written[release] ?? 0)
            if added > 0 { pending[release.service, default: [:]][release.version] = added }
        }
        for (service, versions) in pending.sorted(by: { $0.key < $1.key }) {
            if !force, let last = flushedAt[service], nowMonotonic &- last < Self.flushInterval { continue }
            var time = stored(service) ?? MonitoredTime()
            for (version, seconds) in versions { time.add(seconds, to: version, at: now) }
            do {
                let directory = spool.directory(of: service)
                try ReportStore(directory: directory, access: .sharedWithAgent).writeAtomically(
                    try time.encoded(), to: directory + "/" + MonitoredTime.fileName, name: MonitoredTime.fileName, mode: 0o644)
            } catch {
                logger.warning(
                    "cannot record monitored time", metadata: ["hangwatch.service": "\(service)", "hangwatch.error": "\(error)"])
                continue
            }
            for (version, seconds) in versions {
                written[ServiceRelease(service: service, version: version), default: 0] += seconds
            }
            flushedAt[service] = nowMonotonic
        }
    }

    /// The service's file as it is; nil when there is none or it is not one (then said once).
    func stored(_ service: String) -> MonitoredTime? {
        let path = spool.directory(of: service) + "/" + MonitoredTime.fileName
        let descriptor: Int32
        switch SystemCall.result("open", path: path, { open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }) {
        case .success(let opened): descriptor = opened
        case .failure(let error):
            if error.code != ENOENT { refused(path, "cannot open it: \(error)") }
            return nil
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= Self.maxBytes else {
            refused(path, "not a regular file of at most \(Self.maxBytes) bytes")
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count == bytes.count, let time = MonitoredTime.decode(Data(bytes)) else {
            refused(path, "not a monitored-time file")
            return nil
        }
        return time
    }

    private func refused(_ path: String, _ reason: String) {
        logger.warning(
            "a monitored-time file is replaced: the time it held is lost",
            metadata: ["hangwatch.path": "\(path)", "hangwatch.reason": "\(reason)"])
    }
}
