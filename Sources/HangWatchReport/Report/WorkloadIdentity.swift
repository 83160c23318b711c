#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where the process that wrote a report runs: its container and its Kubernetes pod, named by
/// OpenTelemetry's semantic conventions (`container.id`, `k8s.pod.name`, `k8s.namespace.name`,
/// `k8s.pod.uid`, `k8s.container.name`, `k8s.node.name`). Written into every report as `resource`
/// (docs/report-format.md), each attribute only when known, the object only when one is; the agent
/// sends them with the hang's OpenTelemetry log record, and `hangwatch list` and `top` filter and
/// group by them.
///
/// Read once per process, when the first monitor starts, without asking anyone (`resolve`): each
/// attribute from the first of these that gives it:
/// 1. `OTEL_RESOURCE_ATTRIBUTES` (what a service already tells OpenTelemetry about itself);
/// 2. one variable per attribute, as Kubernetes' downward API sets them in a pod spec: the names
///    of OpenTelemetry's proposal for it (OTEP "Environment Variable Resource Detection in
///    Kubernetes"), `K8S_POD_NAME`, `K8S_NAMESPACE_NAME`, `K8S_POD_UID`, `K8S_NODE_NAME`, and
///    `K8S_CONTAINER_NAME` after them (the downward API cannot give the container's name: the pod
///    spec writes it as a value);
/// 3. the variables the OpenTelemetry Operator injects, `OTEL_RESOURCE_ATTRIBUTES_POD_NAME`,
///    `OTEL_RESOURCE_ATTRIBUTES_POD_UID`, `OTEL_RESOURCE_ATTRIBUTES_NODE_NAME`;
/// 4. `container.id` from `/proc/self/cgroup`, then `/proc/self/mountinfo`, and `k8s.pod.uid` from a
///    kubelet's cgroup path (`ContainerID`).
///
/// `HOSTNAME` is not read: a pod spec may change it, and it is the report's `host` already. A value
/// that still holds `$(` is a reference Kubernetes did not expand (a variable defined after the one
/// that names it) and is no value. Values are trimmed, lose control characters and are cut at
/// `maxBytes` (a Kubernetes name has at most 253 characters).
public struct WorkloadIdentity: Codable, Sendable, Equatable, Hashable {
    /// The semantic convention's name of each attribute, in the order they are shown.
    public enum Attribute: String, CaseIterable, Sendable {
        case containerID = "container.id"
        case podName = "k8s.pod.name"
        case namespaceName = "k8s.namespace.name"
        case podUID = "k8s.pod.uid"
        case containerName = "k8s.container.name"
        case nodeName = "k8s.node.name"

        /// The one variable of the downward-API convention that gives it, if any (OTEP's names).
        var kubernetesVariable: String? {
            switch self {
            case .containerID: nil
            case .podName: "K8S_POD_NAME"
            case .namespaceName: "K8S_NAMESPACE_NAME"
            case .podUID: "K8S_POD_UID"
            case .containerName: "K8S_CONTAINER_NAME"
            case .nodeName: "K8S_NODE_NAME"
            }
        }

        /// The OpenTelemetry Operator's variable that gives it, if any.
        var operatorVariable: String? {
            switch self {
            case .podName: "OTEL_RESOURCE_ATTRIBUTES_POD_NAME"
            case .podUID: "OTEL_RESOURCE_ATTRIBUTES_POD_UID"
            case .nodeName: "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME"
            default: nil
            }
        }
    }

    /// At most this many bytes of a value are kept.
    public static let maxBytes = 253

    public var containerID: String?
    public var podName: String?
    public var namespaceName: String?
    public var podUID: String?
    public var containerName: String?
    public var nodeName: String?

    enum CodingKeys: String, CodingKey {
        case containerID = "container.id"
        case podName = "k8s.pod.name"
        case namespaceName = "k8s.namespace.name"
        case podUID = "k8s.pod.uid"
        case containerName = "k8s.container.name"
        case nodeName = "k8s.node.name"
    }

    public init(
        containerID: String? = nil, podName: String? = nil, namespaceName: String? = nil, podUID: String? = nil,
        containerName: String? = nil, nodeName: String? = nil
    ) {
        self.containerID = containerID
        self.podName = podName
        self.namespaceName = namespaceName
        self.podUID = podUID
        self.containerName = containerName
        self.nodeName = nodeName
    }

    public subscript(attribute: Attribute) -> String? {
        get {
            switch attribute {
            case .containerID: containerID
            case .podName: podName
            case .namespaceName: namespaceName
            case .podUID: podUID
            case .containerName: containerName
            case .nodeName: nodeName
            }
        }
        set {
            switch attribute {
            case .containerID: containerID = newValue
            case .podName: podName = newValue
            case .namespaceName: namespaceName = newValue
            case .podUID: podUID = newValue
            case .containerName: containerName = newValue
            case .nodeName: nodeName = newValue
            }
        }
    }

    /// The attributes known, by their semantic-convention names, in `Attribute`'s order.
    public var attributes: [(name: String, value: String)] {
        Attribute.allCases.compactMap { attribute in self[attribute].map { (attribute.rawValue, $0) } }
    }

    /// No attribute is known.
    public var isEmpty: Bool { Attribute.allCases.allSatisfy { self[$0] == nil } }

    /// `shop/billing-7d9f8-x2x`: the pod as kubectl names it, with its namespace where known; nil
    /// without a pod name.
    public var pod: String? {
        podName.map { name in namespaceName.map { "\($0)/\(name)" } ?? name }
    }

    /// The container: its id where known; else its name in its pod (`shop/billing-7d9f8-x2x/app`),
    /// where both are known; nil otherwise.
    public var container: String? {
        if let containerID { return containerID }
        guard let containerName, let pod else { return nil }
        return "\(pod)/\(containerName)"
    }

    /// The same identity as a file may say it, held to what a monitor writes (each value as
    /// `resolve` bounds it); nil when nothing is left.
    public func bounded() -> WorkloadIdentity? {
        var identity = WorkloadIdentity()
        for attribute in Attribute.allCases {
            identity[attribute] = Self.usable(self[attribute])
        }
        return identity.isEmpty ? nil : identity
    }

    /// The identity by the order above, from `environment` and the texts of `/proc/self/cgroup`
    /// and `/proc/self/mountinfo` (nil: unreadable); nil when nothing is known.
    public static func resolve(environment: [String: String], cgroup: String?, mountinfo: String?) -> WorkloadIdentity? {
        let resource = environment["OTEL_RESOURCE_ATTRIBUTES"].map(ServiceVersion.resourceAttributes) ?? [:]
        var identity = WorkloadIdentity()
        for attribute in Attribute.allCases {
            let candidates = [resource[attribute.rawValue]] + [attribute.kubernetesVariable, attribute.operatorVariable].map { $0.flatMap { environment[$0] } }
            identity[attribute] = candidates.lazy.compactMap(usable).first
        }
        if identity.containerID == nil {
            identity.containerID = cgroup.flatMap { ContainerID.fromCgroup($0) } ?? mountinfo.flatMap { ContainerID.fromMountinfo($0) }
        }
        if identity.podUID == nil { identity.podUID = cgroup.flatMap { ContainerID.podUID(fromCgroup: $0) } }
        return identity.isEmpty ? nil : identity
    }

    /// This process's: its environment, `/proc/self/cgroup` and `/proc/self/mountinfo`.
    public static func ofThisProcess() -> WorkloadIdentity? {
        resolve(
            environment: ProcessInfo.processInfo.environment, cgroup: SmallFile.text("/proc/self/cgroup", limit: 64 << 10),
            mountinfo: SmallFile.text("/proc/self/mountinfo", limit: 1 << 20))
    }

    /// Trimmed, without control characters, at most `maxBytes` bytes (cut at a character); nil
    /// when empty or an unexpanded `$(…)` reference.
    static func usable(_ text: String?) -> String? {
        guard let text, !text.contains("$(") else { return nil }
        var kept = ""
        var bytes = 0
        for character in text.trimmingWhitespace() where !character.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) {
            let size = String(character).utf8.count
            guard bytes + size <= maxBytes else { break }
            kept.append(character)
            bytes += size
        }
        return kept.isEmpty ? nil : kept
    }
}
