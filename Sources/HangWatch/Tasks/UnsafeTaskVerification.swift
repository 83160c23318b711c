import CLinkMap

#if canImport(Glibc)
import Glibc
#endif

/// Whether the tasks read moved while they were read: each task's status word and resume context
/// read again, for 512 tasks a system call (`process_vm_readv` with one range per word), and
/// compared with what the task was read with. A task that moved is read again through the kernel
/// (twice more at most, each read checked the same way), then kept and marked `changedWhileRead`;
/// one that cannot be read any more (it ended) is dropped. Unsafe: raw addresses.
struct UnsafeTaskVerification {
    static let batch = 512

    /// The two words of each task now (status as u32, resume context); nil for a task whose memory
    /// could not be read.
    static func words(of tasks: ArraySlice<UInt>, layout: TaskLayout) -> [(status: UInt32, context: UInt)?] {
        let count = tasks.count
        var remote = [iovec]()
        remote.reserveCapacity(count * 2)
        for task in tasks {
            remote.append(iovec(iov_base: UnsafeMutableRawPointer(bitPattern: task + UInt(layout.status)), iov_len: 8))
            remote.append(iovec(iov_base: UnsafeMutableRawPointer(bitPattern: task + UInt(layout.resumeContext)), iov_len: 8))
        }
        var words = [UInt](repeating: 0, count: count * 2)
        let copied = words.withUnsafeMutableBytes { buffer -> Int in
            var local = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
            return remote.withUnsafeBufferPointer { Int(hw_process_vm_readv(getpid(), &local, 1, $0.baseAddress, UInt(remote.count), 0)) }
        }
        let whole = max(0, copied) / 16
        return (0..<count).map { index in
            index < whole ? (UInt32(truncatingIfNeeded: words[2 * index]), words[2 * index + 1]) : nil
        }
    }

    /// `tasks` as they are now: unchanged ones kept, moved ones read again, gone ones dropped (and
    /// counted in `rejected`).
    static func verify(_ tasks: [TaskSnapshot], reader: inout UnsafeTaskReader, layout: TaskLayout, rejected: inout [TaskRejection: Int]) -> [TaskSnapshot] {
        reader.view(nil)
        var kept: [TaskSnapshot] = []
        kept.reserveCapacity(tasks.count)
        var start = 0
        while start < tasks.count {
            let slice = tasks[start..<min(tasks.count, start + batch)]
            let now = words(of: slice.map(\.address)[...], layout: layout)
            for (task, words) in zip(slice, now) {
                if let words, words.status == task.statusFlags, words.context == task.resumeContext {
                    kept.append(task)
                } else if let again = reread(task.address, reader: &reader, layout: layout) {
                    kept.append(again)
                } else {
                    rejected[.unreadable, default: 0] += 1
                }
            }
            start += batch
        }
        return kept
    }

    /// Read twice more at most, each read checked; the last, marked, when it kept moving.
    private static func reread(_ address: UInt, reader: inout UnsafeTaskReader, layout: TaskLayout) -> TaskSnapshot? {
        var last: TaskSnapshot?
        for _ in 0..<2 {
            guard case .success(let task) = reader.readOnce(address) else { return nil }
            guard let words = words(of: [address][...], layout: layout).first ?? nil else { return nil }
            if words.status == task.statusFlags && words.context == task.resumeContext { return task }
            last = task
        }
        last?.changedWhileRead = true
        return last
    }
}
