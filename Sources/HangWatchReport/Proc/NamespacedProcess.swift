#if canImport(Glibc)
import Glibc
#endif

/// A process in a pid namespace of its own (a container's), as another namespace sees it: a
/// container's pid 1 is pid 27534 on the host. What it says of itself (its pid, its start time,
/// the inode of its pid namespace: in its heartbeat and its reports) is matched here to the pid
/// this reader's `/proc` knows it by, through `NSpid` in `/proc/<pid>/status` (the pid at each
/// level, outermost first) and `/proc/<pid>/ns/pid`. The start time (`stat` field 22) is the same
/// in both views; namespace inodes are reused once a namespace is gone, and several containers'
/// pid 1 may start in the same tick, so all three must agree.
@_spi(Internal) public enum NamespacedProcess {
    /// The inode of the host's (the initial) pid namespace: the kernel's `PROC_PID_INIT_INO`.
    public static let initialPIDNamespace: UInt64 = 0xEFFF_FFFC

    /// The inode of the pid namespace of `/proc/<process>` (`self`, a pid): nil when it cannot be
    /// read (gone, or another user's without the right to look).
    public static func pidNamespace(of process: String = "self") -> UInt64? {
        var info = stat()
        guard stat("/proc/\(process)/ns/pid", &info) == 0 else { return nil }
        return UInt64(info.st_ino)
    }

    /// The pid namespace of the reader itself.
    public static var ownPIDNamespace: UInt64? { pidNamespace(of: "self") }

    /// `NSpid` of a `status` text: the pid at each level of namespaces, outermost first (one value
    /// where the process is in the reader's own namespace, or the reader's `/proc` is its own).
    public static func namespacePIDs(status: ProcStatus) -> [Int32] {
        status.field("NSpid").map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { Int32($0) } } ?? []
    }

    /// The pid this reader's `/proc` knows the process by, which says of itself that it is `pid` in
    /// pid namespace `pidNamespace`, started at tick `startTicks`; nil when no such process runs.
    /// In the reader's own namespace (or the namespace unknown) that is `pid` itself, when its start
    /// time agrees; otherwise every process is looked at (a few hundred reads of small files).
    public static func hostPID(of pid: Int32, pidNamespace: UInt64?, startTicks: UInt64) -> Int32? {
        if pidNamespace == nil || pidNamespace == 0 || pidNamespace == ownPIDNamespace {
            return ProcStat.read(pid: pid)?.startTimeTicks == startTicks ? pid : nil
        }
        guard let directory = opendir("/proc") else { return nil }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let candidate = Int32(name), candidate > 0 else { continue }
            if matches(candidate, pid: pid, pidNamespace: pidNamespace, startTicks: startTicks) { return candidate }
        }
        return nil
    }

    /// Whether `/proc/<candidate>` is the process that is `pid` in `pidNamespace`, started at
    /// `startTicks` (the cheap reads first).
    public static func matches(_ candidate: Int32, pid: Int32, pidNamespace: UInt64?, startTicks: UInt64) -> Bool {
        guard let status = ProcStatus.read(pid: candidate), namespacePIDs(status: status).last == pid,
            ProcStat.read(pid: candidate)?.startTimeTicks == startTicks
        else { return false }
        guard let pidNamespace, pidNamespace != 0 else { return true }
        return Self.pidNamespace(of: String(candidate)) == pidNamespace
    }

    /// The threads of host process `pid` by the ids their own namespace gives them (the innermost
    /// `NSpid` of `/proc/<pid>/task/<tid>/status`): namespace tid -> this reader's tid.
    public static func threads(of pid: Int32) -> [Int32: Int32] {
        guard let directory = opendir("/proc/\(pid)/task") else { return [:] }
        defer { closedir(directory) }
        var threads: [Int32: Int32] = [:]
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let tid = Int32(name), tid > 0 else { continue }
            let inner = ProcStatus.read(path: "/proc/\(pid)/task/\(tid)/status").map { namespacePIDs(status: $0) }?.last ?? tid
            threads[inner] = tid
        }
        return threads
    }
}
