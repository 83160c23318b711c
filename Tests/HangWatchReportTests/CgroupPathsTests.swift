@_spi(Internal) import HangWatchReport
import Testing

/// Where a thread's cgroups are: `/proc/<…>/cgroup` read against `/proc/self/mountinfo`. The
/// fixtures are real files of the project's VM (Linux 6.18, cgroup v1 with `cpu` and `cpuacct`
/// apart, a controller-less v2 at /sys/fs/cgroup/unified), copied from a process in a test cgroup
/// `hwproto` (`/work/proto/containers/samples/proc/`), and lines in the forms Docker, Kubernetes
/// and a cgroup namespace give.
@Suite struct CgroupPathsTests {
    /// `samples/proc/cgroup-of-process-in-hwproto`.
    static let cgroup = """
        9:name=systemd:/
        8:pids:/
        7:blkio:/
        6:freezer:/hwproto
        5:devices:/
        4:memory:/process_api/d23900155e85967299a883ba0e807b04
        3:cpuset:/
        2:cpuacct:/
        1:cpu:/hwproto
        0::/hwproto

        """

    /// `samples/proc/mountinfo`.
    static let mountinfo = """
        22 27 0:21 / /proc rw,relatime - proc proc rw
        23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
        24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334760k,nr_inodes=3083690,mode=755
        27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
        31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
        32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
        33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
        34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
        35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
        36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
        37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
        38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
        39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
        40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw

        """

    @Test func eachControllerIsFoundInItsOwnHierarchyOnTheRealVM() throws {
        let paths = CgroupPaths.parse(cgroup: Self.cgroup, mountinfo: Self.mountinfo)
        let cpu = try #require(paths.directory(controller: "cpu"))
        #expect(cpu.path == "/sys/fs/cgroup/cpu/hwproto" && !cpu.isUnified && cpu.cgroupPath == "/hwproto")
        #expect(cpu.levels == ["/sys/fs/cgroup/cpu/hwproto", "/sys/fs/cgroup/cpu"])
        #expect(cpu.versionName == "cgroup v1")
        // cpu and cpuacct are apart here: `cpuacct` is not `cpu`, and matching is by element.
        #expect(paths.directory(controller: "cpuacct")?.path == "/sys/fs/cgroup/cpuacct")
        #expect(paths.directory(controller: "freezer")?.path == "/sys/fs/cgroup/freezer/hwproto")
        #expect(paths.directory(controller: "name=systemd")?.path == "/sys/fs/cgroup/systemd")
        #expect(paths.directory(controller: "memory")?.path == "/sys/fs/cgroup/memory/process_api/d23900155e85967299a883ba0e807b04")
        // The hybrid's v2 hierarchy holds no controller, but it has its own cgroup.
        let unified = try #require(paths.unifiedDirectory())
        #expect(unified.path == "/sys/fs/cgroup/unified/hwproto" && unified.isUnified && unified.versionName == "cgroup v2")
        #expect(paths.directory(controller: "hugetlb") == nil)
        #expect(paths.directory(controller: "cp") == nil)
    }

    @Test func coMountedControllersAndDeepPathsResolve() throws {
        let paths = CgroupPaths.parse(
            cgroup: "12:cpu,cpuacct:/docker/\(String(repeating: "a", count: 64))\n11:freezer:/docker/x\n",
            mountinfo: "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
                + "31 25 0:27 / /sys/fs/cgroup/freezer rw shared:5 - cgroup cgroup rw,freezer\n")
        let cpu = try #require(paths.directory(controller: "cpu"))
        #expect(cpu.path == "/sys/fs/cgroup/cpu,cpuacct/docker/" + String(repeating: "a", count: 64))
        #expect(cpu.levels.count == 3 && cpu.levels.last == "/sys/fs/cgroup/cpu,cpuacct")
        #expect(paths.directory(controller: "cpuacct")?.path == cpu.path)
        // An optional field (`shared:5`) before the separator is skipped.
        #expect(paths.directory(controller: "freezer")?.path == "/sys/fs/cgroup/freezer/docker/x")
    }

    @Test func aPureV2HostHasOnlyTheUnifiedHierarchy() throws {
        let paths = CgroupPaths.parse(
            cgroup: "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope\n",
            mountinfo: "25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n")
        #expect(paths.directory(controller: "cpu") == nil)
        let unified = try #require(paths.unifiedDirectory())
        #expect(unified.path == "/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope")
        #expect(unified.levels == [
            "/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope",
            "/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice", "/sys/fs/cgroup/kubepods.slice", "/sys/fs/cgroup",
        ])
    }

    /// In a cgroup namespace the file shows the namespace's root; the host's mount, seen from it,
    /// has root `/../..` (measured with `unshare -C`): no directory can be derived. A mount made in
    /// the namespace has root `/`: it is the container's own cgroup.
    @Test func aCgroupOutsideWhatTheMountShowsHasNoDirectory() {
        let hostMount = CgroupPaths.parse(
            cgroup: "1:cpu:/\n", mountinfo: "32 31 0:29 /../.. /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n")
        #expect(hostMount.directory(controller: "cpu") == nil)
        let own = CgroupPaths.parse(cgroup: "1:cpu:/\n", mountinfo: "90 80 0:29 / /tmp/hwcg rw,relatime - cgroup cgroup rw,cpu\n")
        #expect(own.directory(controller: "cpu")?.path == "/tmp/hwcg")
        #expect(own.directory(controller: "cpu")?.levels == ["/tmp/hwcg"])
        // A bind of a subtree: its root is a cgroup path, and only what lies under it is shown.
        let bind = "50 40 0:29 /docker/a /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
        #expect(CgroupPaths.parse(cgroup: "1:cpu:/docker/a/inner\n", mountinfo: bind).directory(controller: "cpu")?.path == "/sys/fs/cgroup/cpu/inner")
        #expect(CgroupPaths.parse(cgroup: "1:cpu:/docker/a\n", mountinfo: bind).directory(controller: "cpu")?.path == "/sys/fs/cgroup/cpu")
        #expect(CgroupPaths.parse(cgroup: "1:cpu:/docker/ab\n", mountinfo: bind).directory(controller: "cpu") == nil)
        #expect(CgroupPaths.parse(cgroup: "1:cpu:/docker/../x\n", mountinfo: bind).directory(controller: "cpu") == nil)
    }

    @Test func linesThatAreNotCgroupLinesAreSkipped() {
        let paths = CgroupPaths.parse(
            cgroup: "garbage\n1:cpu\nx:cpu:/a\n2:cpu:relative\n3:cpu:/ok:with:colons\n",
            mountinfo: "not a mount\n1 2 3 - cgroup\n32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n")
        #expect(paths.memberships == [CgroupPaths.Membership(controllers: ["cpu"], path: "/ok:with:colons")])
        #expect(paths.mounts.count == 1)
        #expect(paths.directory(controller: "cpu")?.path == "/sys/fs/cgroup/cpu/ok:with:colons")
    }

    @Test func escapedMountPointsAreDecoded() {
        let paths = CgroupPaths.parse(
            cgroup: "1:cpu:/a\n", mountinfo: "32 31 0:29 / /mnt/my\\040cgroups rw - cgroup cgroup rw,cpu,release_agent=/x\n")
        #expect(paths.directory(controller: "cpu")?.path == "/mnt/my cgroups/a")
        #expect(paths.mounts.first?.controllers == ["cpu"])
    }

    @Test func theCallingThreadsOwnFilesAreRead() throws {
        let paths = try #require(CgroupPaths.read(tid: nil))
        #expect(!paths.memberships.isEmpty)
    }
}
