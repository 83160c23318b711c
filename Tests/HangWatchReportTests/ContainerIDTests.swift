@_spi(Internal) @testable import HangWatchReport
import Testing

/// The container id and the pod's uid as a process's own `/proc/self/cgroup` and
/// `/proc/self/mountinfo` give them: OpenTelemetry Java's rules (an id is 64 lowercase hex digits),
/// on the files of this machine (no container: no id) and on the shapes each runtime writes.
@Suite struct ContainerIDTests {
    static let id = "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"
    static let sandbox = "9e8d7c6b5a4938271605f4e3d2c1b0a99e8d7c6b5a4938271605f4e3d2c1b0a9"
    static let uid = "0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11"
    static let systemdUID = "0c6a5d3e_2b7e_4a36_a9a4_0d2d1c7f3b11"

    /// `/proc/<pid>/cgroup` of a process moved into a test cgroup on the project's VM (copied from
    /// the machine: /work/proto/containers/samples/proc/cgroup-of-process-in-hwproto). Not a
    /// container: the memory line's 32-hex name is the VM's own cgroup, which opentelemetry-go's
    /// rule (a hex run of any length) reads as a container id.
    static let machineCgroup = """
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

    /// `/proc/self/mountinfo` of the same machine (samples/proc/mountinfo): hybrid cgroups, no
    /// container.
    static let machineMountinfo = """
        22 27 0:21 / /proc rw,relatime - proc proc rw
        23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
        24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334760k,nr_inodes=3083690,mode=755
        25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683772k
        26 24 0:24 / /dev/pts rw,relatime - devpts devpts rw,mode=600,ptmxmode=000
        27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
        28 27 0:25 / /mnt/sandboxing/model_tools_env/v1/python ro,nosuid,nodev,relatime - tmpfs model_tools_unavailable ro,size=4k,mode=755
        29 26 0:26 / /dev/pts rw,relatime - devpts devpts rw,mode=600,ptmxmode=000
        30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683772k
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

    @Test func theMachinesOwnFilesNameNoContainer() {
        #expect(ContainerID.fromCgroup(Self.machineCgroup) == nil)
        #expect(ContainerID.fromMountinfo(Self.machineMountinfo) == nil)
        #expect(ContainerID.podUID(fromCgroup: Self.machineCgroup) == nil)
        #expect(WorkloadIdentity.resolve(environment: [:], cgroup: Self.machineCgroup, mountinfo: Self.machineMountinfo) == nil)
    }

    /// Every runtime's shape of `/proc/self/cgroup` (hand-written in the shapes Docker, containerd,
    /// CRI-O, Podman and the kubelet's two cgroup drivers write, on cgroup v1 and v2 without a
    /// cgroup namespace); the id and the pod's uid each one gives.
    @Test(arguments: [
        // Docker, cgroupfs driver, v1: every hierarchy names the container.
        ("12:cpuset:/docker/\(id)\n11:cpu,cpuacct:/docker/\(id)\n1:name=systemd:/docker/\(id)", id, nil),
        // Docker, systemd driver, v1 and v2.
        ("1:name=systemd:/system.slice/docker-\(id).scope\n0::/system.slice/docker-\(id).scope", id, nil),
        ("0::/system.slice/docker-\(id).scope", id, nil),
        // Kubernetes, cgroupfs driver (Docker or containerd), v1: burstable, besteffort, guaranteed.
        ("11:memory:/kubepods/burstable/pod\(uid)/\(id)\n10:cpu,cpuacct:/kubepods/burstable/pod\(uid)/\(id)", id, uid),
        ("4:pids:/kubepods/besteffort/pod\(uid)/\(id)", id, uid),
        ("4:pids:/kubepods/pod\(uid)/\(id)", id, uid),
        // Kubernetes, systemd driver, containerd and CRI-O, v1 and v2.
        ("7:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod\(systemdUID).slice/cri-containerd-\(id).scope", id, uid),
        ("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod\(systemdUID).slice/crio-\(id).scope", id, uid),
        ("0::/kubepods.slice/kubepods-pod\(systemdUID).slice/cri-containerd-\(id).scope", id, uid),
        // containerd 1.5 and later, systemd driver: the id after the last `:`.
        ("0::/system.slice/containerd.service/kubepods-besteffort-pod\(systemdUID).slice:cri-containerd:\(id)", id, uid),
        // CRI-O's conmon scope and Podman.
        ("0::/machine.slice/libpod-\(id).scope", id, nil),
        ("1:name=systemd:/crio-\(id).scope", id, nil),
        // Amazon ECS: the task, then the container.
        ("9:perf_event:/ecs/5a8f7e0d4c3b4a29b8d1c2e3f4a5b6c7/\(id)", id, nil),
        // A cgroup namespace: only the namespace's root is shown, and the cgroup file says nothing.
        ("0::/", nil, nil),
    ] as [(String, String?, String?)])
    func eachRuntimesCgroupShape(cgroup: String, id: String?, uid: String?) {
        #expect(ContainerID.fromCgroup(cgroup) == id, "\(cgroup)")
        #expect(ContainerID.podUID(fromCgroup: cgroup) == uid, "\(cgroup)")
    }

    /// What is not a container id: fewer or more than 64 digits, capitals, an id that is not the
    /// path's last segment, and a pod directory outside `kubepods`.
    @Test(arguments: [
        "4:memory:/process_api/d23900155e85967299a883ba0e807b04",  // 32 hex: this VM, not a container
        "4:memory:/docker/\(String(id.dropLast()))",  // 63
        "4:memory:/docker/\(id)0",  // 65
        "4:memory:/docker/\(id.uppercased())",
        "4:memory:/docker/\(id)/init.scope",
        "4:memory:/docker/\(id)-x.scope",
        "1:cpu:/hwproto/inner",
        "0::/user.slice/user-1000.slice/session-3.scope",
        "not a cgroup line",
        "",
    ])
    func notAContainerID(cgroup: String) {
        #expect(ContainerID.fromCgroup(cgroup) == nil, "\(cgroup)")
    }

    @Test func aPodDirectoryCountsOnlyUnderKubepods() {
        #expect(ContainerID.podUID(fromCgroup: "0::/system.slice/pod\(Self.uid)/x") == nil)
        #expect(ContainerID.podUID(fromCgroup: "0::/kubepods/burstable/pod\(Self.uid.dropLast())/x") == nil)
        #expect(ContainerID.podUID(fromCgroup: "0::/kubepods/burstable/pod\(Self.uid.uppercased())/x") == nil)
    }

    /// `/proc/self/mountinfo` in a container with a cgroup namespace (v2: `/proc/self/cgroup` is
    /// `0::/`): the id each runtime's mounts give, hand-written in their shapes.
    @Test(arguments: [
        // Docker: the container's resolv.conf, hostname and hosts, bind-mounted from its directory.
        ("""
        812 791 0:104 / / rw,relatime master:312 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/ABC:/var/lib/docker/overlay2/l/DEF,upperdir=/var/lib/docker/overlay2/9f/diff,workdir=/var/lib/docker/overlay2/9f/work
        813 812 0:108 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
        820 812 0:111 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate
        829 812 254:1 /var/lib/docker/containers/\(id)/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/vda1 rw
        830 812 254:1 /var/lib/docker/containers/\(id)/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw
        831 812 254:1 /var/lib/docker/containers/\(id)/hosts /etc/hosts rw,relatime - ext4 /dev/vda1 rw
        """, id),
        // Podman: under its storage's overlay-containers.
        ("""
        1021 1000 0:55 /var/lib/containers/storage/overlay-containers/\(id)/userdata/hostname /etc/hostname rw,nosuid,nodev - tmpfs tmpfs rw
        """, id),
        // CRI-O, the host's cgroup2 mount shown with the container's cgroup as its root.
        ("""
        2310 2301 0:27 /kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod\(systemdUID).slice/crio-\(id).scope /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw
        """, id),
        // containerd with the systemd driver, the same way.
        ("""
        2310 2301 0:27 /system.slice/containerd.service/kubepods-burstable-pod\(systemdUID).slice:cri-containerd:\(id) /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw
        """, id),
        // containerd under Kubernetes with a cgroup namespace: only the pod sandbox's id is mounted
        // (its hostname and resolv.conf), and the termination log's directory is no id: nothing.
        ("""
        1600 1580 0:370 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/81/fs
        1612 1600 254:1 /var/lib/kubelet/pods/\(uid)/etc-hosts /etc/hosts rw,relatime - ext4 /dev/vda1 rw
        1613 1600 254:1 /var/lib/kubelet/pods/\(uid)/containers/app/1a2b3c4d /dev/termination-log rw,relatime - ext4 /dev/vda1 rw
        1614 1600 254:1 /var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/\(sandbox)/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw
        1615 1600 254:1 /var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/\(sandbox)/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/vda1 rw
        """, nil),
        // 64 digits cut out of a longer run are no id; a `/crio-` followed by 65 digits is none.
        ("900 800 254:1 /var/lib/docker/containers/ab\(id)/hostname /etc/hostname rw - ext4 /dev/vda1 rw", nil),
        ("900 800 0:27 /crio-\(id)0.scope /sys/fs/cgroup ro - cgroup2 cgroup2 rw", nil),
        // `/containers/` outside the mount's root (in the mount point) is not looked at.
        ("900 800 254:1 /srv /containers/\(id) rw - ext4 /dev/vda1 rw", nil),
    ] as [(String, String?)])
    func eachRuntimesMountinfoShape(mountinfo: String, id: String?) {
        #expect(ContainerID.fromMountinfo(mountinfo) == id, "\(mountinfo)")
    }

    /// `/crio-` first, then `cri-containerd:`, then the last mount under `/containers/` (Java's
    /// order).
    @Test func theRulesComeInJavasOrder() {
        let other = String(repeating: "ab", count: 32)
        let docker = "900 800 254:1 /var/lib/docker/containers/\(other)/hostname /etc/hostname rw - ext4 /dev/vda1 rw"
        let crio = "901 800 0:27 /kubepods.slice/crio-\(Self.id).scope /sys/fs/cgroup ro - cgroup2 cgroup2 rw"
        #expect(ContainerID.fromMountinfo(docker + "\n" + crio) == Self.id)
        let first = "902 800 254:1 /var/lib/docker/containers/\(Self.id)/hosts /etc/hosts rw - ext4 /dev/vda1 rw"
        #expect(ContainerID.fromMountinfo(first + "\n" + docker) == other)
    }
}
