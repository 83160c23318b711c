import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// This process's thread ids, for a watcher that asks many times a second (the pool watch's looks).
///
/// Listing `/proc/self/task` costs a directory walk in the kernel (a lookup per thread); most
/// looks would find the same threads. So the list is read again only when something may have
/// changed it: the thread count (the directory's link count, which the kernel computes from the
/// count without listing) or the last process id handed out in this pid namespace
/// (`/proc/sys/kernel/ns_last_pid`: every new thread takes one). A thread that ended moves the
/// count; one that started moves the last id, even where another ended in between. Both are read
/// before the listing, so a thread started while it is read is listed at the next call at the
/// latest. (The last id would have to come round to the same value between two calls, through
/// every id of the namespace, for a change to go unseen.)
///
/// Where either cannot be read, the directory is listed at every call, as before.
final class ProcessThreadList {
    private let directory: OpaquePointer? = opendir("/proc/self/task")
    private let lastPIDFile = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC)
    private var lastPIDBuffer = [UInt8](repeating: 0, count: 32)
    private var listed: (count: UInt64, lastPID: UInt64, tids: [Int32])?
    /// How many times the directory was listed (tests).
    private(set) var listings = 0

    deinit {
        if let directory { closedir(directory) }
        if lastPIDFile >= 0 { close(lastPIDFile) }
    }

    /// The thread ids alive now, sorted.
    func threadIDs() -> [Int32] {
        guard let directory else {
            listings += 1
            return Self.current()
        }
        let count = Self.linkCount(of: directory)
        let lastPID = lastAllocatedPID()
        if let listed, let count, let lastPID, listed.count == count, listed.lastPID == lastPID { return listed.tids }
        rewinddir(directory)
        let tids = Self.threadIDs(in: directory)
        listings += 1
        listed = count.flatMap { count in lastPID.map { (count, $0, tids) } }
        return tids
    }

    /// The process's thread ids, sorted, listed once (a caller that asks rarely).
    static func current() -> [Int32] {
        guard let directory = opendir("/proc/self/task") else { return [] }
        defer { closedir(directory) }
        return threadIDs(in: directory)
    }

    /// The thread ids listed by `directory` (`/proc/self/task`, open) from where it stands, sorted.
    private static func threadIDs(in directory: OpaquePointer) -> [Int32] {
        var tids: [Int32] = []
        while let entry = readdir(directory) {
            let tid = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                ByteFields.decimal(ArraySlice(bytes.prefix { $0 != 0 })).flatMap { Int32(exactly: $0) }
            }
            if let tid, tid > 0 { tids.append(tid) }
        }
        return tids.sorted()
    }

    /// The directory's link count: the thread count plus two.
    private static func linkCount(of directory: OpaquePointer) -> UInt64? {
        var info = stat()
        guard fstat(dirfd(directory), &info) == 0 else { return nil }
        return UInt64(info.st_nlink)
    }

    private func lastAllocatedPID() -> UInt64? {
        guard lastPIDFile >= 0 else { return nil }
        let count = lastPIDBuffer.withUnsafeMutableBytes { pread(lastPIDFile, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        var fields = ByteFields(lastPIDBuffer[0..<count])
        return fields.next().flatMap(ByteFields.decimal)
    }
}
