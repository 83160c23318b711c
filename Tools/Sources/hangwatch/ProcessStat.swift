#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// What `/proc/<pid>` says of a process: the facts `hangwatch dump` checks a heartbeat against.
enum ProcessStat {
    /// Field 22 of `/proc/<pid>/stat`: the process's start time, clock ticks after boot.
    static func startTicks(_ pid: Int32) -> UInt64? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat"), let text = String(data: data, encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    /// The real uid (`Uid:` in `/proc/<pid>/status`, its first value).
    static func realUID(_ pid: Int32) -> UInt32? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/status") else { return nil }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("Uid:") }
        return line?.dropFirst(4).split(whereSeparator: { $0 == "\t" || $0 == " " }).first.flatMap { UInt32($0) }
    }

    /// The ids of the process's threads (`/proc/<pid>/task`).
    static func threads(_ pid: Int32) -> Set<Int32> {
        Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []).compactMap { Int32($0) })
    }

    /// Everything a heartbeat is checked against, read now (after the heartbeat, so that a pid
    /// reused meanwhile shows as another start time). Nil when the process is gone.
    static func facts(_ pid: Int32) -> HeartbeatTrust.ProcessFacts? {
        guard let uid = realUID(pid) else { return nil }
        return HeartbeatTrust.ProcessFacts(pid: pid, uid: uid, startTicks: startTicks(pid), threads: threads(pid))
    }

    /// This system's real-time signals, `SIGRTMIN()...SIGRTMAX()` (the C library keeps the first
    /// few for itself, so they are known at run time only).
    static var realTimeSignals: ClosedRange<Int32> {
        __libc_current_sigrtmin()...__libc_current_sigrtmax()
    }
}
