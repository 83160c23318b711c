import CEpoll
@_spi(Internal) import HangWatchReport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An io_uring that polls idle event loops' epoll instances, once each (`arm`): the completion is
/// the loop's wake, and it is never lost.
///
/// Why not nest the loop's instance in ours (`UnsafeLoopEpollWatch`) alone: epoll hands a nested
/// waiter's wake on, then asks the loop's instance again whether an event is still ready; a loop
/// that ran first and consumed it (SwiftNIO registers level-triggered) leaves none, and the wake is
/// dropped. io_uring's poll takes the event mask the wake carries as its result, without asking
/// the file again (the kernel's `io_poll_wake`; epoll's wake of its waiters carries `EPOLLIN`), so
/// the completion is posted and stays in the completion queue until it is read. The ring's own
/// descriptor is readable while completions wait, and sits in the watcher's epoll instance.
///
/// Where io_uring is unavailable (kernels before 5.1, `kernel.io_uring_disabled`, container
/// sandboxes that filter it out), `init` throws why and the watcher nests the instances and looks.
///
/// Unsafe: it maps memory the kernel shares and writes submission entries into it. One thread
/// submits (`arm`, `cancel`: the watchdog's, whose event-loop lanes nest and unnest the loops) and
/// one drains the completions (`drain`: the event-loop watcher's, which waits on the ring): the
/// submission and completion queues are the kernel's two separate rings. One poll per loop is
/// pending at most, so the queues never fill (`entries` loops at most; more are nested instead:
/// `arm` returns false).
final class UnsafeLoopWakeRing: @unchecked Sendable {
    let descriptor: Int32
    private let ringBase: UnsafeMutableRawPointer
    private let ringLength: Int
    private let completionBase: UnsafeMutableRawPointer
    private let completionLength: Int
    private let entries: UnsafeMutablePointer<io_uring_sqe>
    private let entriesLength: Int
    private let params: io_uring_params
    /// Polls submitted and not completed yet (counted up by the submitter, down by the drainer).
    private let pending = Atomic<Int>(0)

    init(entries wanted: UInt32 = 256) throws(SystemCallError) {
        var params = io_uring_params()
        let descriptor = try SystemCall.check("io_uring_setup", retryingInterrupted: false) { hw_io_uring_setup(wanted, &params) }
        let singleMap = params.features & UInt32(IORING_FEAT_SINGLE_MMAP) != 0
        let submissionLength = Int(params.sq_off.array) + Int(params.sq_entries) * MemoryLayout<UInt32>.stride
        let completionLength = Int(params.cq_off.cqes) + Int(params.cq_entries) * MemoryLayout<io_uring_cqe>.stride
        let ringLength = singleMap ? max(submissionLength, completionLength) : submissionLength
        let map = { (length: Int, offset: UInt64) throws(SystemCallError) -> UnsafeMutableRawPointer in
            try SystemCall.check("mmap") { () -> UnsafeMutableRawPointer? in
                let pointer = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, descriptor, off_t(offset))
                return pointer == MAP_FAILED ? nil : pointer
            }
        }
        var mapped: [(UnsafeMutableRawPointer, Int)] = []
        do {
            let ring = try map(ringLength, UInt64(IORING_OFF_SQ_RING))
            mapped.append((ring, ringLength))
            let completions = singleMap ? ring : try map(completionLength, UInt64(IORING_OFF_CQ_RING))
            if !singleMap { mapped.append((completions, completionLength)) }
            let entriesLength = Int(params.sq_entries) * MemoryLayout<io_uring_sqe>.stride
            let submissions = try map(entriesLength, IORING_OFF_SQES)
            self.descriptor = descriptor
            self.params = params
            ringBase = ring
            self.ringLength = ringLength
            completionBase = completions
            self.completionLength = singleMap ? 0 : completionLength
            self.entries = submissions.bindMemory(to: io_uring_sqe.self, capacity: Int(params.sq_entries))
            self.entriesLength = entriesLength
        } catch {
            for (pointer, length) in mapped { munmap(pointer, length) }
            close(descriptor)
            throw error
        }
    }

    deinit {
        munmap(entries, entriesLength)
        if completionLength > 0 { munmap(completionBase, completionLength) }
        munmap(ringBase, ringLength)
        close(descriptor)
    }

    private func word(_ base: UnsafeMutableRawPointer, _ offset: UInt32) -> UnsafeMutablePointer<UInt32> {
        (base + Int(offset)).assumingMemoryBound(to: UInt32.self)
    }

    /// Polls `file` once for `EPOLLIN`; its completion carries `key`. False when it could not be
    /// submitted (the queue full, or the kernel refused).
    func arm(_ file: Int32, key: UInt64) -> Bool {
        submit { entry in
            entry.opcode = UInt8(IORING_OP_POLL_ADD.rawValue)
            entry.fd = file
            entry.poll32_events = EPOLLIN.rawValue
            entry.user_data = key
        }
    }

    /// Withdraws the pending poll whose completion carries `key` (its completion then says
    /// `ECANCELED`).
    func cancel(key: UInt64) {
        _ = submit { entry in
            entry.opcode = UInt8(IORING_OP_POLL_REMOVE.rawValue)
            entry.fd = -1
            entry.addr = key
            entry.user_data = Self.cancelKey
        }
    }

    /// The key of cancellations' own completions (not a loop's).
    static let cancelKey = UInt64.max

    private func submit(_ fill: (inout io_uring_sqe) -> Void) -> Bool {
        let offsets = params.sq_off
        let head = hw_ring_load_acquire(word(ringBase, offsets.head))
        let tail = word(ringBase, offsets.tail).pointee
        guard tail &- head < params.sq_entries, pending.load(ordering: .relaxed) < Int(params.cq_entries) / 2 else { return false }
        let index = tail & word(ringBase, offsets.ring_mask).pointee
        var entry = io_uring_sqe()
        fill(&entry)
        entries[Int(index)] = entry
        word(ringBase, offsets.array).advanced(by: Int(index)).pointee = index
        hw_ring_store_release(word(ringBase, offsets.tail), tail &+ 1)
        guard (try? SystemCall.check("io_uring_enter") { hw_io_uring_enter(descriptor, 1, 0, 0) }) == 1 else { return false }
        pending.add(1, ordering: .relaxed)
        return true
    }

    /// Reads every completion waiting: `body(key, result)` for each (result: the event mask, or a
    /// negated `errno`).
    func drain(_ body: (UInt64, Int32) -> Void) {
        let offsets = params.cq_off
        let headWord = word(completionBase, offsets.head)
        var head = headWord.pointee
        let tail = hw_ring_load_acquire(word(completionBase, offsets.tail))
        let mask = word(completionBase, offsets.ring_mask).pointee
        let completions = (completionBase + Int(offsets.cqes)).assumingMemoryBound(to: io_uring_cqe.self)
        while head != tail {
            let completion = completions[Int(head & mask)]
            head &+= 1
            pending.subtract(1, ordering: .relaxed)
            body(completion.user_data, completion.res)
        }
        hw_ring_store_release(headWord, head)
    }
}
