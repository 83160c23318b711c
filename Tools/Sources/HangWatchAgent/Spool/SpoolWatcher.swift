import Dispatch
import Foundation
import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// inotify on the report root and each service directory: tells which services changed, soon after
/// they did. The periodic full scan stays the reference (inotify can overflow, and a directory
/// created between two events is watched from the next event on).
final class SpoolWatcher: @unchecked Sendable {
    private let spool: Spool
    private let queue: DispatchQueue
    private let changed: @Sendable (Set<String>?) -> Void
    private let fd: Int32
    private var source: DispatchSourceRead?
    /// Watch descriptor to service name ("" for the root). Touched on `queue` only.
    private var services: [Int32: String] = [:]

    private static let rootEvents = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_ONLYDIR | IN_DONT_FOLLOW)
    private static let serviceEvents = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_ONLYDIR | IN_DONT_FOLLOW)

    /// `changed` runs on `queue` with the services that changed (nil: rescan everything).
    init?(spool: Spool, queue: DispatchQueue, changed: @escaping @Sendable (Set<String>?) -> Void) {
        self.spool = spool
        self.queue = queue
        self.changed = changed
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
    }

    deinit {
        source?.cancel()
        if source == nil { close(fd) }
    }

    /// Watches the root and the service directories there now; call on `queue`.
    func start(services names: [String]) {
        watch("")
        for name in names { watch(name) }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.drain() }
        source.setCancelHandler { [fd] in close(fd) }
        self.source = source
        source.resume()
    }

    func stop() {
        source?.cancel()
    }

    private func watch(_ service: String) {
        let path = spool.directory(of: service)
        let descriptor = inotify_add_watch(fd, path, service.isEmpty ? Self.rootEvents : Self.serviceEvents)
        if descriptor >= 0 { services[descriptor] = service }
    }

    private func drain() {
        var dirty = Set<String>()
        var everything = false
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            var offset = 0
            let headerSize = MemoryLayout<inotify_event>.size
            while offset + headerSize <= count {
                let (descriptor, mask, nameLength) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int) in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.wd, event.mask, Int(event.len))
                }
                let nameStart = offset + headerSize
                let nameBytes = buffer[nameStart..<min(count, nameStart + nameLength)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                offset = nameStart + nameLength
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    everything = true
                    continue
                }
                guard let service = services[descriptor] else { continue }
                if mask & UInt32(IN_IGNORED) != 0 {
                    services[descriptor] = nil
                    dirty.insert(service)
                    continue
                }
                if service.isEmpty {
                    // A service directory came or went, or a report landed in the root itself.
                    if mask & UInt32(IN_ISDIR) != 0, !name.hasPrefix(".") {
                        if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 { watch(name) }
                        dirty.insert(name)
                    } else {
                        dirty.insert("")
                    }
                } else {
                    dirty.insert(service)
                }
            }
        }
        if everything {
            changed(nil)
        } else if !dirty.isEmpty {
            changed(dirty)
        }
    }
}
