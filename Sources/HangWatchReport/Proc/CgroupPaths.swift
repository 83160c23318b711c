/// Where a thread's cgroups are: its `cgroup` file (`/proc/self/task/<tid>/cgroup`: which cgroup of
/// each hierarchy) read against `/proc/self/mountinfo` (where each hierarchy is mounted). The one
/// reader of both, for the monitor (a hung thread's CPU limit, its freezer) and the agent.
///
/// - A `cgroup` line is `ID:CONTROLLERS:PATH`. Controllers are a comma list (`cpu,cpuacct` on most
///   hosts, but `cpu` and `cpuacct` apart on others) and named hierarchies read `name=systemd`; the
///   line `0::PATH` is the v2 (unified) hierarchy. A hybrid host has both: a `0::` line says
///   nothing about where a controller is, only the hierarchy that holds it has its files.
/// - A mountinfo line is `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE
///   SUPEROPTIONS`; a v1 hierarchy is type `cgroup` with its controllers among the super options, v2
///   is type `cgroup2`. The cgroup's directory is the mount point plus PATH relative to the
///   mount's ROOT. A PATH outside the mount's ROOT (a cgroup namespace whose host mount shows root
///   `/../..`) has no directory: it is unknown, never guessed.
@_spi(Internal) public struct CgroupPaths: Sendable, Equatable {
    /// One line of a `cgroup` file.
    public struct Membership: Sendable, Equatable {
        /// Controllers of a v1 hierarchy (`["cpu", "cpuacct"]`, `["name=systemd"]`); empty for v2.
        public var controllers: [String]
        /// The cgroup's path in its hierarchy (`/docker/abc`, `/`).
        public var path: String
        public var isUnified: Bool { controllers.isEmpty }

        public init(controllers: [String], path: String) {
            self.controllers = controllers
            self.path = path
        }
    }

    /// One cgroup filesystem mount.
    public struct Mount: Sendable, Equatable {
        /// The cgroup path the mount shows at its mount point (`/` unless a namespace or a bind).
        public var root: String
        public var mountPoint: String
        /// v1: the hierarchy's controllers (and `name=`); empty for v2.
        public var controllers: [String]
        public var isUnified: Bool

        public init(root: String, mountPoint: String, controllers: [String], isUnified: Bool) {
            self.root = root
            self.mountPoint = mountPoint
            self.controllers = controllers
            self.isUnified = isUnified
        }
    }

    /// A cgroup's directory, and what it takes to walk up from it.
    public struct Directory: Sendable, Equatable {
        /// `cgroup v1` or `cgroup v2`.
        public var isUnified: Bool
        /// The cgroup's path in its hierarchy, as the `cgroup` file says it.
        public var cgroupPath: String
        /// The directory (`/sys/fs/cgroup/cpu/docker/abc`).
        public var path: String
        /// The mount point: the highest directory this process can see of the hierarchy.
        public var mountPoint: String

        public init(isUnified: Bool, cgroupPath: String, path: String, mountPoint: String) {
            self.isUnified = isUnified
            self.cgroupPath = cgroupPath
            self.path = path
            self.mountPoint = mountPoint
        }

        /// The directory and each parent up to the mount point, innermost first.
        public var levels: [String] {
            var levels = [path]
            var current = path
            while current != mountPoint, current.count > mountPoint.count {
                current = PathText.parent(of: current)
                levels.append(current)
            }
            return levels
        }

        /// `cgroup v1` / `cgroup v2`: how reports name the hierarchy.
        public var versionName: String { isUnified ? "cgroup v2" : "cgroup v1" }
    }

    public var memberships: [Membership]
    public var mounts: [Mount]

    public init(memberships: [Membership], mounts: [Mount]) {
        self.memberships = memberships
        self.mounts = mounts
    }

    /// Parses a `cgroup` file and a `mountinfo` file; lines that are not such lines are skipped.
    public static func parse(cgroup: String, mountinfo: String) -> CgroupPaths {
        CgroupPaths(
            memberships: cgroup.split(separator: "\n").compactMap(parseMembership),
            mounts: mountinfo.split(separator: "\n").compactMap(parseMount))
    }

    static func parseMembership(_ line: Substring) -> Membership? {
        // The path may itself hold ':' (`…slice:cri-containerd:<id>`): split at the first two only.
        let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(\.isNumber), parts[2].hasPrefix("/") else { return nil }
        let controllers = parts[1].split(separator: ",").map(String.init)
        return Membership(controllers: controllers, path: String(parts[2]))
    }

    static func parseMount(_ line: Substring) -> Mount? {
        let fields = line.split(separator: " ")
        guard let dash = fields.firstIndex(of: "-"), dash >= 6, fields.count >= dash + 3 else { return nil }
        let type = fields[dash + 1]
        guard type == "cgroup" || type == "cgroup2" else { return nil }
        let unified = type == "cgroup2"
        let controllers = unified ? [] : fields[dash + 3].split(separator: ",").map(String.init).filter { option in
            // Super options beside the controllers: rw/ro and the v1 mount options.
            !["rw", "ro", "noprefix", "clone_children", "cpuset_v2_mode", "xattr", "favordynmods"].contains(option)
                && !option.hasPrefix("release_agent=")
        }
        return Mount(root: unescape(fields[3]), mountPoint: unescape(fields[4]), controllers: controllers, isUnified: unified)
    }

    /// mountinfo writes a space, tab, newline and backslash in a path as `\040`, `\011`, `\012`, `\134`.
    static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        let utf8 = Array(field.utf8)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "\\"), index + 3 < utf8.count,
                let value = UInt8(String(decoding: utf8[(index + 1)...(index + 3)], as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The directory of the v1 hierarchy that holds `controller` (`cpu`, `freezer`), matched as one
    /// element of the controller list; nil when no v1 hierarchy holds it, it is not mounted here,
    /// or the cgroup is outside what the mount shows.
    public func directory(controller: String) -> Directory? {
        guard let membership = memberships.first(where: { $0.controllers.contains(controller) }),
            let mount = mounts.first(where: { !$0.isUnified && $0.controllers.contains(controller) })
        else { return nil }
        return Self.directory(membership.path, in: mount)
    }

    /// The directory of the v2 (unified) hierarchy's cgroup, nil without a `0::` line or a `cgroup2`
    /// mount (or outside what the mount shows).
    public func unifiedDirectory() -> Directory? {
        guard let membership = memberships.first(where: \.isUnified), let mount = mounts.first(where: \.isUnified) else { return nil }
        return Self.directory(membership.path, in: mount)
    }

    /// `path` (the cgroup's) under `mount`: nil when the mount does not show it.
    static func directory(_ path: String, in mount: Mount) -> Directory? {
        let root = mount.root == "/" ? "" : mount.root
        guard !root.contains("/.."), !path.split(separator: "/").contains(".."),
            path == mount.root || root.isEmpty || path.hasPrefix(root + "/")
        else { return nil }
        let relative = String(path.dropFirst(root.count))
        let trimmed = relative == "/" ? "" : relative
        let base = mount.mountPoint == "/" ? "" : mount.mountPoint
        return Directory(
            isUnified: mount.isUnified, cgroupPath: path, path: trimmed.isEmpty ? mount.mountPoint : base + trimmed,
            mountPoint: mount.mountPoint)
    }

    /// Thread `tid`'s (this process's; nil: the calling process's leader's view, `/proc/self/cgroup`).
    /// v1 is per thread: `/proc/self/cgroup` is the thread-group leader's, which another thread may
    /// not share.
    public static func read(tid: Int32?) -> CgroupPaths? {
        let file = tid.map { "/proc/self/task/\($0)/cgroup" } ?? "/proc/self/cgroup"
        guard let cgroup = SmallFile.text(file, limit: 16 << 10), let mountinfo = SmallFile.text("/proc/self/mountinfo", limit: 1 << 20)
        else { return nil }
        return parse(cgroup: cgroup, mountinfo: mountinfo)
    }

    /// Process `pid`'s, as another process sees it: its `cgroup` file against the reader's own
    /// mounts (the agent, on the host).
    public static func read(pid: Int32) -> CgroupPaths? {
        guard pid > 0, let cgroup = SmallFile.text("/proc/\(pid)/cgroup", limit: 16 << 10),
            let mountinfo = SmallFile.text("/proc/self/mountinfo", limit: 1 << 20)
        else { return nil }
        return parse(cgroup: cgroup, mountinfo: mountinfo)
    }
}
