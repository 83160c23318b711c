import Foundation
@_spi(Internal) @testable import HangWatchReport
import HangWatchTestSupport
import Testing

/// Which container and pod a process runs in, from its environment and its own /proc files, each
/// attribute from the first source that gives it.
@Suite struct WorkloadIdentityTests {
    static let id = ContainerIDTests.id
    static let uid = ContainerIDTests.uid
    static let kubepods = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod\(ContainerIDTests.systemdUID).slice/cri-containerd-\(id).scope"

    /// A pod spec's downward-API variables, by the names HangWatch reads (OTEP's), give every
    /// attribute; the cgroup gives the container's id.
    @Test func theDownwardAPIsVariablesNameThePod() {
        let environment = [
            "K8S_POD_NAME": "billing-7d9f8-x2x", "K8S_NAMESPACE_NAME": "shop", "K8S_POD_UID": Self.uid, "K8S_NODE_NAME": "node-3",
            "K8S_CONTAINER_NAME": "app",
        ]
        let identity = WorkloadIdentity.resolve(environment: environment, cgroup: Self.kubepods, mountinfo: nil)
        #expect(
            identity
                == WorkloadIdentity(
                    containerID: Self.id, podName: "billing-7d9f8-x2x", namespaceName: "shop", podUID: Self.uid, containerName: "app",
                    nodeName: "node-3"))
        #expect(identity?.pod == "shop/billing-7d9f8-x2x" && identity?.container == Self.id)
        #expect(identity?.attributes.map(\.name) == WorkloadIdentity.Attribute.allCases.map(\.rawValue))
    }

    /// `OTEL_RESOURCE_ATTRIBUTES` first, then the downward-API convention's variable, then the
    /// OpenTelemetry Operator's, then the /proc files.
    @Test(arguments: [
        (["OTEL_RESOURCE_ATTRIBUTES": "k8s.pod.name=from-otel", "K8S_POD_NAME": "from-k8s", "OTEL_RESOURCE_ATTRIBUTES_POD_NAME": "from-operator"], "from-otel"),
        (["OTEL_RESOURCE_ATTRIBUTES": "service.name=billing", "K8S_POD_NAME": "from-k8s", "OTEL_RESOURCE_ATTRIBUTES_POD_NAME": "from-operator"], "from-k8s"),
        (["K8S_POD_NAME": " ", "OTEL_RESOURCE_ATTRIBUTES_POD_NAME": "from-operator"], "from-operator"),
        // Kubernetes leaves `$(VAR)` as written when VAR is defined after the variable naming it.
        (["OTEL_RESOURCE_ATTRIBUTES": "k8s.pod.name=$(K8S_POD_NAME)", "K8S_POD_NAME": "from-k8s"], "from-k8s"),
        (["OTEL_RESOURCE_ATTRIBUTES": "k8s.pod.name=billing%2D1"], "billing-1"),
        (["POD_NAME": "generic", "HOSTNAME": "billing-7d9f8-x2x", "MY_POD_NAME": "example"], nil),
    ] as [([String: String], String?)])
    func theFirstSourceThatSaysSomethingWins(environment: [String: String], podName: String?) {
        #expect(WorkloadIdentity.resolve(environment: environment, cgroup: nil, mountinfo: nil)?.podName == podName, "\(environment)")
    }

    @Test func theOperatorsVariablesAndEveryAttributeFromOpenTelemetry() {
        let operatorSet = [
            "OTEL_RESOURCE_ATTRIBUTES_POD_NAME": "api-0", "OTEL_RESOURCE_ATTRIBUTES_POD_UID": Self.uid,
            "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME": "node-1",
            "OTEL_RESOURCE_ATTRIBUTES": "k8s.namespace.name=prod,k8s.container.name=api,service.name=api",
        ]
        #expect(
            WorkloadIdentity.resolve(environment: operatorSet, cgroup: nil, mountinfo: nil)
                == WorkloadIdentity(podName: "api-0", namespaceName: "prod", podUID: Self.uid, containerName: "api", nodeName: "node-1"))
        let all = "container.id=c1,k8s.pod.name=p,k8s.namespace.name=n,k8s.pod.uid=u,k8s.container.name=c,k8s.node.name=h"
        // What the service says of itself wins over what its cgroup says.
        #expect(
            WorkloadIdentity.resolve(environment: ["OTEL_RESOURCE_ATTRIBUTES": all], cgroup: Self.kubepods, mountinfo: nil)
                == WorkloadIdentity(containerID: "c1", podName: "p", namespaceName: "n", podUID: "u", containerName: "c", nodeName: "h"))
    }

    /// Without variables, the cgroup names the container and the pod's uid; on cgroup v2 with a
    /// cgroup namespace, mountinfo names the container.
    @Test func theProcFilesAloneNameTheContainer() {
        #expect(
            WorkloadIdentity.resolve(environment: [:], cgroup: Self.kubepods, mountinfo: nil) == WorkloadIdentity(containerID: Self.id, podUID: Self.uid))
        let docker = "829 812 254:1 /var/lib/docker/containers/\(Self.id)/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw"
        #expect(WorkloadIdentity.resolve(environment: [:], cgroup: "0::/\n", mountinfo: docker) == WorkloadIdentity(containerID: Self.id))
        #expect(WorkloadIdentity.resolve(environment: [:], cgroup: nil, mountinfo: nil) == nil)
    }

    /// A value is printable and bounded (it is printed, and becomes an attribute): control
    /// characters go, and at most 253 bytes stay, cut at a character.
    @Test func valuesAreBoundedAndPrintable() throws {
        let long = try #require(WorkloadIdentity.resolve(environment: ["K8S_POD_NAME": String(repeating: "é", count: 200)], cgroup: nil, mountinfo: nil))
        #expect(long.podName == String(repeating: "é", count: 126))
        #expect(WorkloadIdentity.resolve(environment: ["K8S_NODE_NAME": "node\n-3\u{7f}\t "], cgroup: nil, mountinfo: nil)?.nodeName == "node-3")
        let hostile = WorkloadIdentity(podName: String(repeating: "x", count: 4096), nodeName: "\u{1b}[31m")
        #expect(hostile.bounded() == WorkloadIdentity(podName: String(repeating: "x", count: 253), nodeName: "[31m"))
        #expect(WorkloadIdentity(nodeName: "\n").bounded() == nil)
    }

    @Test func thePodAndTheContainerAsKubectlNamesThem() {
        #expect(WorkloadIdentity(podName: "p").pod == "p")
        #expect(WorkloadIdentity(namespaceName: "n").pod == nil)
        #expect(WorkloadIdentity(podName: "p", namespaceName: "n", containerName: "app").container == "n/p/app")
        #expect(WorkloadIdentity(containerName: "app").container == nil)
    }

    /// In a report, `resource` holds the attributes by their semantic-convention names, only the
    /// known ones; a report without it (older, or of a process that runs nowhere known) reads as
    /// none.
    @Test func aReportCarriesItsResourceByTheConventionsNames() throws {
        var report = ReportFixtures.report()
        report.resource = WorkloadIdentity(containerID: Self.id, podName: "billing-7d9f8-x2x", namespaceName: "shop")
        let object = try #require(try JSONSerialization.jsonObject(with: report.encoded()) as? [String: Any])
        #expect(object["schema"] as? String == "hangwatch.hang/1.8")
        #expect(object["resource"] as? [String: String] == ["container.id": Self.id, "k8s.pod.name": "billing-7d9f8-x2x", "k8s.namespace.name": "shop"])
        #expect(try HangReport.decode(report.encoded()).resource == report.resource)
        let plain = try ReportFixtures.report().encoded()
        #expect(try #require(try JSONSerialization.jsonObject(with: plain) as? [String: Any])["resource"] == nil)
        #expect(try HangReport.decode(plain).resource == nil)
    }

    /// The pod specs shipped (config/kubernetes/) set the variables the monitor reads, by these
    /// names, each from the downward API's field that holds it (the container's name as a value):
    /// every container in them sets all five, and none sets a name the monitor does not read.
    @Test func theShippedManifestsSetTheVariablesTheMonitorReads() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path
        let source: [String: String] = [
            "K8S_POD_NAME": "fieldPath: metadata.name", "K8S_NAMESPACE_NAME": "fieldPath: metadata.namespace",
            "K8S_POD_UID": "fieldPath: metadata.uid", "K8S_NODE_NAME": "fieldPath: spec.nodeName", "K8S_CONTAINER_NAME": "value: ",
        ]
        #expect(Set(source.keys) == Set(WorkloadIdentity.Attribute.allCases.compactMap(\.kubernetesVariable)))
        let manifests = try FileManager.default.contentsOfDirectory(atPath: repository + "/config/kubernetes").filter { $0.hasSuffix(".yaml") }
        #expect(manifests.count >= 3)
        for manifest in manifests {
            let lines = try String(contentsOfFile: repository + "/config/kubernetes/" + manifest, encoding: .utf8)
                .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            var counts: [String: Int] = [:]
            for (index, line) in lines.enumerated() where line.hasPrefix("- name: K8S_") {
                let name = String(line.dropFirst("- name: ".count))
                counts[name, default: 0] += 1
                let expected = try #require(source[name], "\(manifest): \(name) is not a variable the monitor reads")
                let entry = lines[(index + 1)...].prefix { !$0.hasPrefix("- ") }
                #expect(entry.contains { $0.hasPrefix(expected) }, "\(manifest): \(name) is not set from \(expected)")
            }
            #expect(Set(counts.keys) == Set(source.keys), "\(manifest): \(counts)")
            #expect(Set(counts.values).count == 1, "\(manifest): every container sets all five: \(counts)")
        }
    }
}
