@_spi(Internal) import HangWatchReport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// glibc's thread descriptors (`struct pthread`, what `pthread_t` and the thread pointer point
/// to), read from outside their threads: where in one the thread's `tid` lies and a word that
/// points back at the descriptor itself, both found in the calling thread's own descriptor (no
/// layout is assumed); and where a thread's descriptor is from where its stack is. Reads go
/// through the kernel (`UnsafeProcessMemory`): a wrong guess reads nothing it may not. Unsafe: it
/// reads other threads' raw memory.
///
/// - A futex word at the `tid` place of a descriptor that points back at itself, holding a live
///   thread's tid, is that thread's `tid`: what `pthread_join` waits on.
/// - glibc (x86_64) puts a thread's descriptor at the top of the mapping it allocates for the
///   thread's stack, the same distance below every such mapping's end (learnt on a thread whose
///   stack block it knows: `learnOnCurrentThread`). An address there whose first word (`tcb`) and
///   self word point at it is that thread's descriptor: every thread's, and with it its tid and
///   thread-local words, found without stopping or signalling it.
enum UnsafeThreadDescriptor {
    /// (offset of `tid`, offset of the self pointer), nil when either is not found exactly once.
    static let layout: (tid: UInt, selfPointer: UInt)? = {
        let descriptor = UInt(pthread_self())
        let tidTarget = SmallFile.link("/proc/thread-self") ?? ""
        guard descriptor != 0, let tid = Int32(tidTarget.split(separator: "/").last ?? ""),
            let words = UnsafeProcessMemory.copyArray(UInt32.self, at: descriptor, count: 512)
        else { return nil }
        let tidOffsets = words.indices.filter { words[$0] == UInt32(bitPattern: tid) }
        guard tidOffsets.count == 1 else { return nil }
        // The first word (`tcb`) points back too on x86_64; the self pointer is the next that does.
        let selfOffsets = stride(from: 2, to: words.count - 1, by: 2).filter {
            UInt(words[$0]) | UInt(words[$0 + 1]) << 32 == descriptor
        }
        guard let selfOffset = selfOffsets.first else { return nil }
        return (UInt(tidOffsets[0] * 4), UInt(selfOffset * 4))
    }()

    static func isTIDWordOfALiveThread(_ address: UInt) -> Bool {
        guard let layout, address >= layout.tid, let value = UnsafeProcessMemory.copy(Int32.self, at: address), value > 0,
            access("/proc/self/task/\(value)", F_OK) == 0
        else { return false }
        return checks(address - layout.tid)
    }

    /// How far below its stack mapping's end a thread's descriptor is, once learnt.
    private static let belowMappingEnd = Mutex<UInt?>(nil)

    /// Learns where a descriptor sits in its stack's mapping, from the calling thread's own, once
    /// (nothing on a thread whose descriptor is not in its stack block: the main thread's, one
    /// given a stack of its own). True when it is known.
    @discardableResult
    static func learnOnCurrentThread() -> Bool {
        if belowMappingEnd.withLock({ $0 != nil }) { return true }
        let pointer = UInt(pthread_self())
        guard let stack = UnsafeCaptureBridge.currentThreadStack(), pointer >= stack.low, pointer < stack.high, checks(pointer) else {
            return false
        }
        belowMappingEnd.withLock { $0 = stack.high - pointer }
        return true
    }

    /// The descriptor (thread pointer) and tid of the thread whose stack mapping ends at `end`, when
    /// the descriptor there checks out.
    static func thread(mappingEnd end: UInt) -> (pointer: UInt, tid: Int32)? {
        guard let below = belowMappingEnd.withLock({ $0 }), end > below else { return nil }
        let pointer = end - below
        return tid(ofPointer: pointer).map { (pointer, $0) }
    }

    /// The tid in the descriptor at `pointer`, when one is there.
    static func tid(ofPointer pointer: UInt) -> Int32? {
        guard let layout, checks(pointer), let tid = UnsafeProcessMemory.copy(Int32.self, at: pointer + layout.tid), tid > 0 else {
            return nil
        }
        return tid
    }

    /// Whether `pointer` holds a glibc thread descriptor: its first word and its self word point at it.
    static func checks(_ pointer: UInt) -> Bool {
        guard let layout, pointer != 0, pointer % 8 == 0, let first = UnsafeProcessMemory.copy(UInt.self, at: pointer),
            let selfWord = UnsafeProcessMemory.copy(UInt.self, at: pointer + layout.selfPointer)
        else { return false }
        return first == pointer && selfWord == pointer
    }
}
