import CLinkMap

#if canImport(Glibc)
import Glibc
#endif

/// Finds where a library keeps a thread-local word, from the thread itself: the word of the
/// calling thread's block of that library's thread-local storage (`dl_iterate_phdr` gives the
/// calling thread's block) that holds a value the thread knows. The address is then read from any
/// thread through the kernel (`UnsafeProcessMemory`). Used for the Swift runtime's current task
/// (`UnsafeCurrentTaskSlot`) and libdispatch's current queue (`UnsafeCurrentQueueSlot`).
/// Unsafe: it reads raw thread-local memory.
enum UnsafeThreadLocalWord {
    /// The calling thread's thread-local block of the image whose code holds `address`.
    static func block(ofImageContaining address: UInt) -> UnsafeRawBufferPointer? {
        var block: UnsafeRawBufferPointer?
        UnsafeImageMapReader.forEachLoadedImage { info in
            guard let headers = info.dlpi_phdr else { return true }
            let bias = UInt(info.dlpi_addr)
            var holdsAddress = false
            var tlsSize = 0
            for header in UnsafeBufferPointer(start: headers, count: Int(info.dlpi_phnum)) {
                let start = bias &+ UInt(header.p_vaddr)
                if header.p_type == UInt32(PT_LOAD), address >= start, address < start &+ UInt(header.p_memsz) { holdsAddress = true }
                if header.p_type == UInt32(PT_TLS) { tlsSize = Int(header.p_memsz) }
            }
            guard holdsAddress else { return true }
            if let data = info.dlpi_tls_data, tlsSize > 0 { block = UnsafeRawBufferPointer(start: data, count: tlsSize) }
            return false
        }
        return block
    }

    /// The address of the one aligned word of `block` that holds `value`; nil when none or more
    /// than one does (the word is then not known for sure).
    static func locate(_ value: UInt, in block: UnsafeRawBufferPointer) -> UInt? {
        guard value != 0, let start = block.baseAddress else { return nil }
        let stride = MemoryLayout<UInt>.stride
        let words = block.count / stride
        var found: Int?
        for index in 0..<words where start.load(fromByteOffset: index * stride, as: UInt.self) == value {
            guard found == nil else { return nil }
            found = index
        }
        return found.map { UInt(bitPattern: start) + UInt($0 * stride) }
    }
}

/// Which dispatch queue a libdispatch worker drains now, read from outside that worker.
///
/// libdispatch keeps each thread's current queue in a thread-local word (what
/// `dispatch_get_current_queue` returns inside a block). A thread finds the address of its own
/// word inside a block of the watched queue (the ping): the queue's pointer must be in exactly one
/// word of its block of libdispatch's thread-local storage. At a stall, the monitor reads the word
/// of every thread that ran a ping: the one that holds the queue is the thread that runs the
/// stalling block, whichever worker libdispatch gave it to.
enum UnsafeCurrentQueueSlot {
    private typealias GetCurrentQueue = @convention(c) () -> UnsafeMutableRawPointer?

    private static let library: (getCurrentQueue: GetCurrentQueue, code: UInt)? = {
        let anyImage: UnsafeMutableRawPointer? = nil  // glibc's RTLD_DEFAULT
        guard let function = dlsym(anyImage, "dispatch_get_current_queue") else { return nil }
        return (unsafeBitCast(function, to: GetCurrentQueue.self), UInt(bitPattern: function))
    }()

    /// Inside a block of a queue: that queue (its libdispatch object's address) and the address of
    /// the calling thread's current-queue word; nil when the word is not found exactly once.
    static func locateOnCurrentThread() -> (queue: UInt, slot: UInt)? {
        guard let library, let queue = library.getCurrentQueue(),
            let block = UnsafeThreadLocalWord.block(ofImageContaining: library.code),
            let slot = UnsafeThreadLocalWord.locate(UInt(bitPattern: queue), in: block)
        else { return nil }
        return (UInt(bitPattern: queue), slot)
    }

    /// The queue the thread whose word is at `slot` drains now (0: none); nil when the word could
    /// not be read (the thread is gone).
    static func queue(slot: UInt) -> UInt? {
        UnsafeProcessMemory.copy(UInt.self, at: slot)
    }
}
