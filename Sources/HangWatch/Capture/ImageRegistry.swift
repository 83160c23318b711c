import Logging
import Synchronization

/// The current `ImageMap`, and its publication to the unwinder.
///
/// Read at start; read again only after a hang ends when a captured address lies outside every
/// known image (something was loaded since). Never read while the loop is hung: a thread stuck in
/// `dlopen` may hold the loader lock that reading takes.
final class ImageRegistry: Sendable {
    private let map: Mutex<ImageMap>
    private let pendingPublication = Atomic<Bool>(false)
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
        map = Mutex(UnsafeImageMapReader.read())
        publish()
    }

    var current: ImageMap { map.withLock { $0 } }

    /// Re-reads the images if any of `addresses` is outside all of them, or a previous publication
    /// had to wait for an unwind in flight.
    func refreshIfNeeded(for addresses: [UInt]) {
        let stale = !map.withLock { $0.covers(addresses) }
        if stale {
            map.withLock { $0 = UnsafeImageMapReader.read() }
            publish()
        } else if pendingPublication.load(ordering: .relaxed) {
            publish()
        }
    }

    private func publish() {
        let snapshot = current
        switch UnsafeCaptureBridge.publish(snapshot) {
        case .published:
            pendingPublication.store(false, ordering: .relaxed)
        case .busy:
            pendingPublication.store(true, ordering: .relaxed)
        case .tooLarge:
            logger.warning(
                "too many loaded images for the unwind table; stacks through the rest stop early",
                metadata: ["hangwatch.images": "\(snapshot.images.count)"])
        }
    }
}
