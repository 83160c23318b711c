/// The container a process runs in, as its own `/proc/self/cgroup` and `/proc/self/mountinfo` say
/// it, without asking anyone (no runtime socket, no Kubernetes API). The one reader of them for
/// the report's `resource` (`WorkloadIdentity`).
///
/// The rules are those of OpenTelemetry Java's container resource detector
/// (opentelemetry-java-instrumentation, `instrumentation/resources/library`:
/// `CgroupV1ContainerIdExtractor` and `CgroupV2ContainerIdExtractor`), the strictest of the
/// OpenTelemetry detectors: an id is exactly 64 lowercase hex digits. opentelemetry-go's cgroup
/// rule takes a hex run of any length, and so reads a container id into a host that has none (a
/// 32-hex cgroup name such as `4:memory:/process_api/d23900155e85967299a883ba0e807b04`).
///
/// 1. `/proc/self/cgroup` (cgroup v1, and the v2 line `0::PATH` of a host without cgroup
///    namespaces), the first line that has one: the path's last segment is the id
///    (`/docker/ID`, `/kubepods/burstable/pod<uid>/ID`), or the part of it after the last `:`
///    (containerd 1.5 and later under the systemd driver: `…slice:cri-containerd:ID`), or between
///    its last `-` and its last `.` (`docker-ID.scope`, `cri-containerd-ID.scope`,
///    `crio-ID.scope`, `libpod-ID.scope`).
/// 2. `/proc/self/mountinfo` (cgroup v2 with a cgroup namespace, where `/proc/self/cgroup` says only
///    `0::/`): the first `/crio-ID`, else the first `cri-containerd:ID`, else, from the mounts whose
///    root is under a `/containers/` directory (`/var/lib/docker/containers/ID/hostname`,
///    `/var/lib/containers/storage/overlay-containers/ID/userdata/hostname`), the id of the last
///    such mount. Stricter than Java here: the id must be a whole path segment (as opentelemetry-go
///    requires), not 64 hex digits cut out of a longer run, and `/crio-` and `cri-containerd:`
///    must be followed by exactly 64. containerd's `/sandboxes/ID/hostname` is the pod sandbox's
///    id, not the container's, and is not taken.
///
/// And the pod's uid, where the kubelet named the cgroup after it: a `pod<uid>` segment
/// (`/kubepods/burstable/pod0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11/…`, cgroupfs driver) or
/// `…-pod<uid with _>.slice` (systemd driver), on a path under `kubepods`. (None of the
/// OpenTelemetry detectors reads it; it is the kubelet's own name for the pod's cgroup.)
@_spi(Internal) public enum ContainerID {
    /// The container id by rule 1, nil when no line has one.
    public static func fromCgroup(_ text: String) -> String? {
        for line in text.split(separator: "\n") {
            guard let slash = line.lastIndex(of: "/") else { continue }
            let last = line[line.index(after: slash)...]
            let candidate: Substring
            if let colon = last.lastIndex(of: ":") {
                candidate = last[last.index(after: colon)...]
            } else {
                let start = last.lastIndex(of: "-").map { last.index(after: $0) } ?? last.startIndex
                let end = last.lastIndex(of: ".") ?? last.endIndex
                guard start <= end else { continue }
                candidate = last[start..<end]
            }
            if isID(candidate) { return String(candidate) }
        }
        return nil
    }

    /// The container id by rule 2, nil when no mount names one.
    public static func fromMountinfo(_ text: String) -> String? {
        let lines = text.split(separator: "\n")
        for marker in ["/crio-", "cri-containerd:"] {
            for line in lines {
                var rest = line[...]
                while let found = rest.firstRange(of: marker) {
                    let after = rest[found.upperBound...]
                    let id = after.prefix(64)
                    if isID(id), after.dropFirst(64).first.map({ !isHexDigit($0) }) ?? true { return String(id) }
                    rest = after
                }
            }
        }
        var last: String?
        for line in lines {
            if let id = idUnderContainers(line) { last = id }
        }
        return last
    }

    /// A mountinfo line's root (its fourth field) under a `/containers/` directory: the first
    /// 64-hex segment after the last `/containers/` that has one.
    static func idUnderContainers(_ line: Substring) -> String? {
        let fields = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count >= 4, fields[0].allSatisfy(\.isASCIIDigit), fields[1].allSatisfy(\.isASCIIDigit),
            !fields[0].isEmpty, !fields[1].isEmpty, fields[2].contains(":")
        else { return nil }
        let root = fields[3]
        var searched = root[...]
        while let found = searched.ranges(of: "/containers/").last {
            let segments = root[found.upperBound...].split(separator: "/")
            if let id = segments.first(where: isID) { return String(id) }
            searched = root[..<found.lowerBound]
        }
        return nil
    }

    /// The pod's uid from a `/proc/self/cgroup` path under `kubepods`, in the API's form (with
    /// dashes); nil when no such line names one.
    public static func podUID(fromCgroup text: String) -> String? {
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, parts[2].contains("kubepods") else { continue }
            for segment in parts[2].split(separator: "/") {
                var candidate: Substring?
                if segment.hasPrefix("pod") {
                    candidate = segment.dropFirst(3)
                } else if let pod = segment.ranges(of: "-pod").last, let slice = segment[pod.upperBound...].firstRange(of: ".slice") {
                    // `kubepods-burstable-pod<uid>.slice`, also before `:cri-containerd:ID`.
                    candidate = segment[pod.upperBound..<slice.lowerBound]
                }
                if let uid = candidate.map({ String($0).replacing("_", with: "-") }), isUUID(uid) { return uid }
            }
        }
        return nil
    }

    /// Exactly 64 lowercase hex digits.
    public static func isID(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy(isLowerHex)
    }

    /// `8-4-4-4-12` lowercase hex digits.
    static func isUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.utf8.count) == [8, 4, 4, 4, 12] && groups.allSatisfy { $0.utf8.allSatisfy(isLowerHex) }
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
    }

    private static func isHexDigit(_ character: Character) -> Bool {
        character.asciiValue.map(isLowerHex) ?? false
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { asciiValue.map { (0x30...0x39).contains($0) } ?? false }
}
