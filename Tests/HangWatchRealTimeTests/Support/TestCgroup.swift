import Foundation
import HangWatchTestSupport
import Testing

/// A cgroup made for one test under a hierarchy of this machine (root only), the child processes
/// the test starts put in it from their first instruction (`launcher`). `remove()` (in a `defer`)
/// thaws it, moves anything still in it back to the hierarchy's root and removes it, whatever the
/// test did; a cgroup left by a killed test run is removed by the next one (`sweep`).
final class TestCgroup {
    /// The hierarchy's mount (`/sys/fs/cgroup/cpu`) and the cgroup's directory in it.
    let hierarchy: String
    let path: String
    static let prefix = "hangwatch-test-"

    /// A new cgroup under `hierarchy`, or why there can be none here (the control that cannot run).
    static func make(in hierarchy: String, needing files: [String] = []) throws -> TestCgroup {
        guard getuid() == 0 else { try ControlCheck.cannotRun("making a cgroup needs root") }
        guard FileManager.default.fileExists(atPath: hierarchy + "/cgroup.procs") else {
            try ControlCheck.cannotRun("no cgroup hierarchy mounted at \(hierarchy)")
        }
        sweep(hierarchy)
        let path = hierarchy + "/" + prefix + "\(getpid())-\(UUID().uuidString.prefix(8))"
        guard mkdir(path, 0o755) == 0 else { try ControlCheck.cannotRun("mkdir \(path): errno \(errno)") }
        let cgroup = TestCgroup(hierarchy: hierarchy, path: path)
        for file in files where !FileManager.default.fileExists(atPath: path + "/" + file) {
            cgroup.remove()
            try ControlCheck.cannotRun("\(path) has no \(file) (the kernel lacks it)")
        }
        return cgroup
    }

    private init(hierarchy: String, path: String) {
        self.hierarchy = hierarchy
        self.path = path
    }

    func write(_ file: String, _ value: String) throws {
        let fd = open(path + "/" + file, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CgroupError(what: "open \(path)/\(file)", code: errno) }
        defer { close(fd) }
        let bytes = Array(value.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw CgroupError(what: "write \(value) to \(path)/\(file)", code: errno)
        }
    }

    func read(_ file: String) -> String? {
        try? String(contentsOfFile: path + "/" + file, encoding: .utf8)
    }

    /// `key value` of a flat-keyed file (`cpu.stat`, `cgroup.stat.local`).
    func value(_ key: String, in file: String) -> UInt64? {
        for line in (read(file) ?? "").split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == key { return UInt64(parts[1]) }
        }
        return nil
    }

    /// What starts a child in `cgroups` (its first instruction already there), after `prefix`
    /// (`nice -n -20`, `taskset -c 0`).
    static func launcher(_ cgroups: [TestCgroup], after prefix: [String] = []) -> [String] {
        let joins = cgroups.map { "echo $$ > '\($0.path)/cgroup.procs' && " }.joined()
        return prefix + ["/bin/sh", "-c", joins + "exec \"$@\"", "sh"]
    }

    /// Thaws it, moves what is left in it to the root and removes it.
    func remove() {
        if FileManager.default.fileExists(atPath: path + "/freezer.state") { try? write("freezer.state", "THAWED") }
        if FileManager.default.fileExists(atPath: path + "/cgroup.freeze") { try? write("cgroup.freeze", "0") }
        Self.empty(path, into: hierarchy)
        for _ in 0..<50 {
            if rmdir(path) == 0 || errno == ENOENT { return }
            usleep(20_000)
        }
    }

    private static func empty(_ path: String, into hierarchy: String) {
        let pids = (try? String(contentsOfFile: path + "/cgroup.procs", encoding: .utf8))?.split(separator: "\n") ?? []
        for pid in pids {
            let fd = open(hierarchy + "/cgroup.procs", O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            _ = Array(pid.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
    }

    /// Removes cgroups an earlier run left (a test process killed before its `defer`).
    static func sweep(_ hierarchy: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: hierarchy)) ?? [] where name.hasPrefix(prefix) {
            let owner = name.dropFirst(prefix.count).split(separator: "-").first.flatMap { Int32($0) }
            guard let owner, owner != getpid(), kill(owner, 0) != 0 else { continue }
            let stale = TestCgroup(hierarchy: hierarchy, path: hierarchy + "/" + name)
            stale.remove()
        }
    }

    struct CgroupError: Error, CustomStringConvertible {
        var what: String
        var code: Int32
        var description: String { "\(what): \(String(cString: strerror(code)))" }
    }
}
