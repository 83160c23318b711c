import Synchronization

/// A thread-safe counter.
final class AtomicCounter: Sendable {
    private let storage = Atomic<UInt64>(0)
    func increment() -> UInt64 {
        storage.add(1, ordering: .relaxed).newValue
    }
}
