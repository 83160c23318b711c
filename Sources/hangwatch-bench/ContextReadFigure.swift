import Foundation
import HangWatch

/// Figure 21: what the watchdog's reads of a hang's context cost (`LinuxHangContextProbe`): at the
/// first look at a busy stretch, with each sample, at detection and the end, and the per-hang walk
/// of the limit. Measured for a thread in the root cgroups (a bare host: the look reads nothing),
/// and, as root, for one in a v1 cpu and a v1 freezer cgroup and a v2 cgroup of its own (every file
/// read: the throttled time, the freezer's state and frozen_usec, the cgroup's memory pressure).
struct ContextReadFigure {
    var count = 2000

    struct Outcome {
        var place: String
        var reads: String
        var timings: CaptureProbe.ContextReadTimings
    }

    /// The measured thread: this one, moved into cgroups of its own for the second measure.
    func measure() throws -> [Outcome] {
        let tid = benchThreadID()
        guard let root = CaptureProbe.timeContextReads(tid: tid, count: count) else { throw BenchError.setup("no probe of thread \(tid)") }
        var outcomes = [Outcome(place: "root cgroups", reads: root.reads, timings: root)]
        guard getuid() == 0 else { return outcomes }
        let name = "hangwatch-bench-\(getpid())"
        let hierarchies = ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/freezer", "/sys/fs/cgroup/unified"].filter {
            FileManager.default.fileExists(atPath: $0 + "/cgroup.procs")
        }
        var made: [String] = []
        defer {
            for directory in made {
                Self.write(PathText.parent(directory) + "/cgroup.procs", String(getpid()))
                rmdir(directory)
            }
        }
        for hierarchy in hierarchies {
            let directory = hierarchy + "/" + name
            guard mkdir(directory, 0o755) == 0 else { continue }
            made.append(directory)
            Self.write(directory + "/cgroup.procs", String(getpid()))
        }
        guard !made.isEmpty, let own = CaptureProbe.timeContextReads(tid: tid, count: count) else { return outcomes }
        outcomes.append(Outcome(place: "cgroups of its own (\(made.count): \(made.map { PathText.parent($0) }.joined(separator: ", ")))", reads: own.reads, timings: own))
        return outcomes
    }

    static func write(_ path: String, _ value: String) {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = Array(value.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}

/// `PathText` is the report module's; the bench needs only its parent.
private enum PathText {
    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}
