import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// A real monitored service started as Kubernetes starts one, with the downward API's variables
/// in its environment (the names docs/containers.md gives the pod spec), in two pods: each report
/// names its pod, and the CLI groups and filters by it.
@Suite(.serialized) struct PodIdentityTests {
    static let pods = [
        (name: "billing-7d9f8-x2x4q", uid: "0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11"),
        (name: "billing-7d9f8-k9m2z", uid: "5e1f0a2b-8c3d-4e5f-9a6b-7c8d9e0f1a2b"),
    ]

    @Test func reportsOfAServiceInAPodNameThePodAndTopGroupsByIt() throws {
        let demo = BuiltExecutable.path("hangwatch-demo")
        try #require(FileManager.default.isExecutableFile(atPath: demo), "build the demo first: swift build")
        let spool = ReportDirectory()
        for pod in Self.pods {
            // One 800 ms hang on the main queue, then the service exits.
            let run = try ExecutableRun.run(
                demo, ["--reports", spool.path + "/" + pod.name, "--main-queue"],
                environment: [
                    "K8S_POD_NAME": pod.name, "K8S_NAMESPACE_NAME": "shop", "K8S_POD_UID": pod.uid, "K8S_NODE_NAME": "node-3",
                    "K8S_CONTAINER_NAME": "app", "OTEL_RESOURCE_ATTRIBUTES": nil,
                ], timeout: 120)
            #expect(run.status == 0, "\(run.output)\(run.errors)")
            let reports = ReportDirectory(path: spool.path + "/" + pod.name).reports()
            try #require(!reports.isEmpty, "\(run.output)\(run.errors)")
            for report in reports {
                let resource = try #require(report.resource, "\(report.id)")
                #expect(resource.podName == pod.name && resource.namespaceName == "shop" && resource.podUID == pod.uid, "\(resource)")
                #expect(resource.nodeName == "node-3" && resource.containerName == "app")
                // This machine is no container (its memory cgroup's 32-hex name is none of a container's).
                #expect(resource.containerID == ContainerIDOfThisMachine.id, "\(resource)")
            }
        }

        let cache = spool.path + "-cache"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        func hangwatch(_ arguments: String..., directory: String? = nil) throws -> CommandResult {
            try ExecutableRun.run(
                BuiltExecutable.path("hangwatch"), arguments + ["--dir", directory ?? spool.path],
                environment: ["XDG_CACHE_HOME": cache, "HANGWATCH_REPORT_DIR": nil, "COLUMNS": nil, "NO_COLOR": nil])
        }
        struct Group: Decodable {
            var by: String?
            var value: String?
            var count: Int
        }
        let top = try hangwatch("top", "--by", "pod", "--json")
        #expect(top.status == 0, "\(top.errors)")
        let groups = try HangReport.makeDecoder().decode([Group].self, from: Data(top.output.utf8))
        let expected = Dictionary(uniqueKeysWithValues: Self.pods.map { ("shop/" + $0.name, ReportDirectory(path: spool.path + "/" + $0.name).reports().count) })
        #expect(Dictionary(uniqueKeysWithValues: groups.map { ($0.value ?? "none", $0.count) }) == expected, "\(top.output)")
        #expect(groups.allSatisfy { $0.by == "pod" })
        let text = try hangwatch("top", "--by", "pod")
        #expect(Set(text.lines.filter { $0.hasPrefix("#") }.compactMap { $0.split(separator: " ").last.map(String.init) }) == Set(expected.keys.map { "pod=" + $0 }), "\(text.output)")

        let listed = try hangwatch("list", "--pod", Self.pods[0].name, "--json")
        let summaries = try HangReport.makeDecoder().decode([ReportSummary].self, from: Data(listed.output.utf8))
        #expect(summaries.count == expected["shop/" + Self.pods[0].name] && summaries.allSatisfy { $0.resource?.podName == Self.pods[0].name })
        let show = try hangwatch("show", "latest", directory: spool.path + "/" + Self.pods[1].name)
        #expect(show.lines.contains("pod       shop/\(Self.pods[1].name), uid \(Self.pods[1].uid)"), "\(show.output)")
        #expect(show.lines.contains("node      node-3") && show.lines.contains("container app"), "\(show.output)")
    }
}

/// What this machine's own cgroup says of a container: nothing here runs in one, so nil; checked
/// against the machine's files, so the test above does not assume it.
enum ContainerIDOfThisMachine {
    static var id: String? {
        WorkloadIdentity.resolve(
            environment: [:], cgroup: try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
            mountinfo: try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8))?.containerID
    }
}
