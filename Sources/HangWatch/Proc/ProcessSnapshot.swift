@_spi(Internal) import HangWatchReport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Process-wide context read from /proc when a hang is detected.
package struct ProcessSnapshot: Sendable, Equatable {
    package var rssBytes: UInt64?
    package var loadAverage: [Double]?
    package var tracerPID: Int32?
    package var cpuCount: Int

    package init(rssBytes: UInt64?, loadAverage: [Double]?, tracerPID: Int32?, cpuCount: Int) {
        self.rssBytes = rssBytes
        self.loadAverage = loadAverage
        self.tracerPID = tracerPID
        self.cpuCount = cpuCount
    }

    static func read() -> ProcessSnapshot {
        let pageSize = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        let rss = SmallFile.text("/proc/self/statm").flatMap { text -> UInt64? in
            let fields = text.split(separator: " ")
            return fields.count >= 2 ? UInt64(fields[1]).map { $0 * pageSize } : nil
        }
        let load = SmallFile.text("/proc/loadavg").map { text in
            text.split(separator: " ").prefix(3).compactMap { Double($0) }
        }
        let tracer = ProcStatus.read(path: "/proc/self/status")?.tracerPID
        return ProcessSnapshot(
            rssBytes: rss, loadAverage: load?.count == 3 ? load : nil, tracerPID: tracer,
            cpuCount: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    var debuggerAttached: Bool { (tracerPID ?? 0) != 0 }

    /// Where this process runs, its container and pod (every report's `resource`): read once, when
    /// the first monitor starts, as neither changes while the process runs.
    static let workload: WorkloadIdentity? = WorkloadIdentity.ofThisProcess()

    /// This process's start time in clock ticks since boot (`/proc/self/stat` field 22).
    static func processStartTimeTicks() -> UInt64 {
        ProcStat.read(path: "/proc/self/stat")?.startTimeTicks ?? 0
    }

    static func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments.first ?? "?"
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
