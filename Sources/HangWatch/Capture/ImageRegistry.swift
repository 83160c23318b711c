import Logging
import Synchronization

/// The current `ImageMap`, and its publication to the unwinder.
///
/// Read from the loader at start, and again after a hang that reached an address outside every
/// known image (something was loaded since). Never from the loader while the loop is hung: a thread
/// stuck in `dlopen` may hold the loader lock that reading takes. During a hang, images the table
/// lacks are read from `/proc/self/maps` instead (`learnDuringHang`), which takes no lock.
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

    /// During a hang: when an address lies outside every known image (code `dlopen` is still
    /// loading, its constructors running), adds the images `/proc/self/maps` shows and publishes
    /// them. True when something was added: a stack taken again reaches further.
    func learnDuringHang(addresses: [UInt]) -> Bool {
        let added = map.withLock { map -> Bool in
            guard !map.covers(addresses) else { return false }
            let images = UnsafeImageMapReader.readMappedImages(notIn: map)
            guard !images.isEmpty else { return false }
            map = ImageMap(images: map.images + images)
            return true
        }
        if added {
            publish()
            logger.debug("images learned during a hang", metadata: ["hangwatch.images": "\(current.images.count)"])
        }
        return added && !pendingPublication.load(ordering: .relaxed)
    }

    private func publish() {
        let snapshot = current
        switch UnsafeImageTable.publish(snapshot) {
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
