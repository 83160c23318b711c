import Foundation
import Synchronization
@_spi(Internal) import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import HangWatchAgent

/// The agent against real peers: Prometheus and promtool from Debian's `prometheus` package, and
/// an OTLP receiver that decodes with the official OpenTelemetry protobuf definitions.
@Suite(.serialized) struct FleetExportTests {
    /// How many hangs the demo's reports stand for.
    static func demoHangs() throws -> Int {
        let directory = try DemoReports.directory.get()
        return try ReportStore(directory: directory).list().map { try ReportReader().read(path: $0.path) }
            .filter(FinishedHang.counts).map(FinishedHang.hangCount).reduce(0, +)
    }

    static func scrape(_ port: Int) -> String? {
        guard let url = URL(string: "http://127.0.0.1:\(port)/metrics"), let data = try? Data(contentsOf: url) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The sum of a metric's samples whose labels contain `labels`.
    static func value(_ text: String?, _ name: String, _ labels: String = "") -> Double? {
        guard let text else { return nil }
        let samples = text.split(separator: "\n").filter { line in
            (line.hasPrefix(name + "{") || line.hasPrefix(name + " ")) && (labels.isEmpty || line.contains(labels))
        }
        guard !samples.isEmpty else { return nil }
        return samples.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try #require(bind(fd, $0, length) == 0)
                try #require(getsockname(fd, $0, &length) == 0)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func tool(_ name: String) throws -> String {
        let path = "/usr/bin/" + name
        try #require(FileManager.default.isExecutableFile(atPath: path), "\(path) is missing: install Debian's prometheus package (make deps)")
        return path
    }

    /// Runs promtool with `arguments` (and `input` on its standard input): its status and output.
    static func promtool(_ arguments: [String], input: String = "") throws -> (status: Int32, output: String) {
        let promtool = Process()
        promtool.executableURL = URL(fileURLWithPath: try tool("promtool"))
        promtool.arguments = arguments
        let stdin = Pipe()
        let output = Pipe()
        promtool.standardInput = stdin
        promtool.standardOutput = output
        promtool.standardError = output
        try promtool.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        promtool.waitUntilExit()
        return (promtool.terminationStatus, said)
    }

    /// A file of this repository, by its path from the top.
    static func repositoryFile(_ path: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../" + path).standardized.path
    }

    /// The shipped rules (config/prometheus/hangwatch.rules.yml) through `sed` with `sed`'s
    /// arguments, written beside `root` (the caller removes the file): its path.
    static func shippedRules(beside root: String, sed arguments: [String]) throws -> String {
        let rules = root + ".rules.yml"
        let sed = try ExecutableRun.run("/bin/sed", arguments + [repositoryFile("config/prometheus/hangwatch.rules.yml")], timeout: 10)
        try #require(sed.status == 0, "sed: \(sed.errors)")
        try sed.output.write(toFile: rules, atomically: true, encoding: .utf8)
        return rules
    }

    /// The `-e` expressions of the sed docs/fleet.md gives for short windows ("Windows, for a
    /// test"), as written there: `sed -e '…' -e '…' hangwatch.rules.yml`.
    static func documentedSed() throws -> [String] {
        let text = try String(contentsOfFile: repositoryFile("docs/fleet.md"), encoding: .utf8)
        let marker = try #require(text.range(of: "**Windows, for a test.**"), "docs/fleet.md has no \"Windows, for a test\"")
        let line = try #require(text[marker.upperBound...].split(separator: "\n").first { $0.hasPrefix("sed ") }, "no sed line")
        // Quoted and unquoted parts alternate: `sed -e `, an expression, ` -e `, …, ` hangwatch.rules.yml`.
        let parts = line.split(separator: "'", omittingEmptySubsequences: false).map(String.init)
        let unquoted = stride(from: 0, to: parts.count, by: 2).map { parts[$0] }
        try #require(
            parts.count >= 3 && unquoted.first == "sed -e " && unquoted.last == " hangwatch.rules.yml" && unquoted.dropFirst().dropLast().allSatisfy { $0 == " -e " },
            "not the shape this test reads: \(line)")
        return stride(from: 1, to: parts.count, by: 2).flatMap { ["-e", parts[$0]] }
    }

    @Test func metricsCountOnlyHangsThatAppearAfterStartAndPassPromtool() throws {
        let root = try SpoolRoot()
        try DemoReports.copy(into: root.path, service: "old")
        let agent = try AgentProcess(root: root.path)
        try agent.waitUntilReady()
        let port = try #require(agent.metricsPort, "\(agent.log)")
        let expected = Double(try Self.demoHangs())
        try DemoReports.copy(into: root.path, service: "billing")
        // The counters move as each report is indexed, the spool's gauges at the end of that pass
        // (a scrape between the two, seen beside a busy CPU, has the hangs and not yet the files):
        // one scrape with both.
        let scraped = Eventually.value(timeout: 20, interval: 0.02, { Self.scrape(port) }) { text in
            Self.value(text, "hangwatch_hangs_total", #"service="billing""#) == expected && Self.value(text, "hangwatch_spool_reports") == expected * 2
        }
        let text = try #require(scraped, "\(agent.log)")
        #expect(Self.value(text, "hangwatch_hangs_total", #"service="old""#) == 0)
        #expect(Self.value(text, "hangwatch_hang_duration_seconds_count", #"service="billing""#) == expected)
        #expect(Self.value(text, "hangwatch_spool_reports") == expected * 2 + 0)
        #expect(Self.value(text, "hangwatch_monitors", #"state="alive""#) == 1)  // the agent's own
        // Read from that monitor's heartbeat: the series exists from its first page.
        #expect(Self.value(text, "hangwatch_capture_calls_cut_short_total") != nil, "\(text)")

        let (status, verdict) = try Self.promtool(["check", "metrics"], input: text)
        #expect(status == 0, "promtool: \(verdict)")
    }

    @Test func prometheusSeesTheHangCountGoUpByTheHangsProduced() throws {
        let root = try SpoolRoot()
        try FileManager.default.createDirectory(atPath: root.path + "/billing", withIntermediateDirectories: true)
        let agent = try AgentProcess(root: root.path)
        try agent.waitUntilReady()
        let agentPort = try #require(agent.metricsPort, "\(agent.log)")

        let prometheus = try LivePrometheus(root: root.path, agentPort: agentPort)
        let query = prometheus.query
        let expression = #"sum(hangwatch_hangs_total{service="billing"})"#
        #expect(Eventually.holds(timeout: 30, interval: 0.02) { query(expression) == 0 }, "Prometheus never scraped the agent's zero")
        let before = try #require(query(expression))
        try DemoReports.copy(into: root.path, service: "billing")
        let produced = Double(try Self.demoHangs())
        #expect(Eventually.holds(timeout: 30, interval: 0.02) { query(expression) == before + produced }, "\(query(expression) ?? -1)")
    }

    /// Debian's Prometheus, scraping the agent at `agentPort` every second (and evaluating
    /// `rules`, when given, as often), its files beside `root`; killed and removed when released.
    final class LivePrometheus {
        let process = Process()
        let port: Int
        let files: [String]

        init(root: String, agentPort: Int, rules: String? = nil) throws {
            port = try FleetExportTests.freePort()
            let configuration = root + ".prometheus.yml"
            files = [configuration, root + ".tsdb"]
            try """
                global:
                  scrape_interval: 1s
                  evaluation_interval: 1s
                rule_files: [\(rules.map { "'\($0)'" } ?? "")]
                scrape_configs:
                  - job_name: hangwatchd
                    static_configs:
                      - targets: ['127.0.0.1:\(agentPort)']
                """.write(toFile: configuration, atomically: true, encoding: .utf8)
            process.executableURL = URL(fileURLWithPath: try FleetExportTests.tool("prometheus"))
            process.arguments = ["--config.file=\(configuration)", "--storage.tsdb.path=\(root).tsdb", "--web.listen-address=127.0.0.1:\(port)"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            for file in files { try? FileManager.default.removeItem(atPath: file) }
        }

        /// The `data` of a query API answer at `path` (with `query`), nil until it answers.
        private func data(_ path: String, query: String? = nil) -> [String: Any]? {
            var components = URLComponents(string: "http://127.0.0.1:\(port)\(path)")
            if let query { components?.queryItems = [URLQueryItem(name: "query", value: query)] }
            guard let url = components?.url, let data = try? Data(contentsOf: url),
                let body = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { return nil }
            return body["data"] as? [String: Any]
        }

        /// An instant query's series (each with its `metric` and `value` or `values`), nil until it answers.
        func result(_ expression: String) -> [[String: Any]]? {
            data("/api/v1/query", query: expression)?["result"] as? [[String: Any]]
        }

        /// The first sample's value of an instant query.
        func query(_ expression: String) -> Double? {
            guard let first = result(expression)?.first, let sample = first["value"] as? [Any], let text = sample.last as? String else { return nil }
            return Double(text)
        }

        /// The samples of a range query's first series (`name{…}[5m]`): Unix time and value, oldest first.
        func samples(_ expression: String) -> [(time: Double, value: Double)] {
            guard let values = result(expression)?.first?["values"] as? [[Any]] else { return [] }
            return values.compactMap { pair in
                guard pair.count == 2, let time = (pair[0] as? NSNumber)?.doubleValue, let text = pair[1] as? String, let value = Double(text)
                else { return nil }
                return (time, value)
            }
        }

        /// The alerts pending or firing.
        func alerts() -> [[String: Any]]? { data("/api/v1/alerts")?["alerts"] as? [[String: Any]] }
    }

    /// The OTLP receiver (Fixtures/otlp_receiver.py): its records, as JSON objects.
    final class Receiver {
        let process = Process()
        let output: String
        init(output: String, port: Int = 0) throws {
            self.output = output
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/otlp_receiver.py").path
            // The python3 on PATH: the one `make deps` installed opentelemetry-proto for.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", script, output, String(port)]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try? FileManager.default.removeItem(atPath: output + ".port")
            try process.run()
            let started = Eventually.holds(timeout: 15, interval: 0.02) { FileManager.default.fileExists(atPath: output + ".port") || !process.isRunning }
            try #require(started && process.isRunning, "the receiver did not start (python3 -m pip install opentelemetry-proto): \(String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self))")
        }
        var port: Int { Int((try? String(contentsOfFile: output + ".port", encoding: .utf8)) ?? "") ?? 0 }
        var records: [[String: Any]] {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        var logs: [[String: Any]] { records.filter { $0["kind"] as? String == "log" } }
        deinit {
            // SIGKILL: children of the test runner inherit its blocked SIGTERM.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: output)
            try? FileManager.default.removeItem(atPath: output + ".port")
        }
    }

    @Test func eachHangIsOneOTLPLogRecordWithItsFacts() throws {
        let root = try SpoolRoot()
        let receiver = try Receiver(output: root.path + ".otlp.jsonl")
        let agent = try AgentProcess(
            root: root.path,
            arguments: [
                "--set", "HANGWATCHD_OTLP_ENDPOINT=http://127.0.0.1:\(receiver.port)", "--set", "HANGWATCHD_OTLP_METRICS_INTERVAL=1s",
                "--set", "HANGWATCHD_ENRICH_DELAY=0",
            ])
        try agent.waitUntilReady()
        try DemoReports.copy(into: root.path, service: "billing")
        let count = root.reports("billing").count
        #expect(Eventually.holds(timeout: 30, interval: 0.02) { receiver.logs.count == count }, "\(receiver.logs.count) records; \(agent.log)")
        // As the agent named them (a record goes out once its report is named).
        let reports = root.reports("billing")
        let byID = Dictionary(uniqueKeysWithValues: reports.map { ($0.id, $0) })
        for record in receiver.logs {
            let attributes = try #require(record["attributes"] as? [String: Any])
            let report = try #require(byID[attributes["hangwatch.report.id"] as? String ?? ""])
            #expect(record["severity_text"] as? String == "warning")
            #expect((record["body"] as? String)?.contains(HangReportSummary.verdictLine(report)) == true)
            #expect(attributes["service.name"] as? String == report.service)
            #expect(attributes["hangwatch.hang.duration_ms"] as? String == String(Int(report.durationMs.rounded())))
            // Grouped by names, as `hangwatch top` groups the report, and said so.
            #expect(report.grouping.kind == .names && report.nameSignature == report.grouping.signature)
            #expect(attributes["hangwatch.hang.signature"] as? String == report.grouping.signature)
            #expect(attributes["hangwatch.hang.signature_kind"] as? String == "names")
            #expect(record["trace_id"] as? String == "" && record["span_id"] as? String == "")
            #expect((attributes["hangwatch.hang.top_frames"] as? [String])?.isEmpty == false)
            #expect(attributes["hangwatch.report.path"] as? String == root.path + "/billing/hang-\(report.id).json")
            if let ratio = report.context.onCpuRatio { #expect(attributes["hangwatch.hang.oncpu_ratio"] as? String == "\(ratio)") }
            // Sent after the agent named the frames: the culprit is the demo's function, by name.
            #expect((attributes["hangwatch.hang.culprit"] as? String)?.hasPrefix("DemoService.") == true, "\(attributes)")
        }
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { receiver.records.contains { $0["name"] as? String == "hangwatch_hangs_total" } })
    }

    /// Each hang's record says where its process ran, by the semantic conventions' names (the
    /// report's `resource`; none for a report that says none); the records' and the metrics'
    /// resource says where the agent runs, read from its own environment as a monitor reads its
    /// own (here a sidecar's: the pod is its service's, the container its own).
    @Test func theRecordsNameTheirPodAndTheResourceIsTheAgents() throws {
        let root = try SpoolRoot()
        let receiver = try Receiver(output: root.path + ".otlp.jsonl")
        let agent = try AgentProcess(
            root: root.path,
            arguments: [
                "--set", "HANGWATCHD_OTLP_ENDPOINT=http://127.0.0.1:\(receiver.port)", "--set", "HANGWATCHD_OTLP_METRICS_INTERVAL=1s",
                "--set", "HANGWATCHD_ENRICH_DELAY=0",
            ],
            environment: [
                "K8S_POD_NAME": "billing-7d9f8-x2x4q", "K8S_NAMESPACE_NAME": "shop", "K8S_NODE_NAME": "node-3",
                "K8S_CONTAINER_NAME": "hangwatchd", "OTEL_RESOURCE_ATTRIBUTES": nil,
            ])
        try agent.waitUntilReady()
        let store = ReportStore(directory: root.path + "/billing", access: .sharedWithAgent)
        try store.prepare()
        let demo = try DemoReports.reports()
        let app = WorkloadIdentity(
            containerID: String(repeating: "3f2a1b4c", count: 8), podName: "billing-7d9f8-x2x4q", namespaceName: "shop",
            podUID: "0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11", containerName: "app", nodeName: "node-3")
        var expected: [String: WorkloadIdentity?] = [:]
        for (index, report) in demo.enumerated() {
            var placed = report
            placed.id += "-placed"
            placed.resource = index == 0 ? nil : app
            expected[placed.id] = placed.resource
            try store.write(placed)
        }
        #expect(Eventually.holds(timeout: 30, interval: 0.02) { receiver.logs.count == demo.count }, "\(receiver.logs.count) records; \(agent.log)")
        let names = WorkloadIdentity.Attribute.allCases.map(\.rawValue)
        for record in receiver.logs {
            let attributes = try #require(record["attributes"] as? [String: Any])
            let resource = try #require(expected[attributes["hangwatch.report.id"] as? String ?? ""], "\(attributes)")
            for name in names {
                #expect(attributes[name] as? String == resource?[WorkloadIdentity.Attribute(rawValue: name)!], "\(name): \(attributes)")
            }
            let agentResource = try #require(record["resource"] as? [String: Any])
            #expect(agentResource["service.name"] as? String == "hangwatchd")
            #expect(agentResource["k8s.pod.name"] as? String == "billing-7d9f8-x2x4q" && agentResource["k8s.namespace.name"] as? String == "shop")
            #expect(agentResource["k8s.container.name"] as? String == "hangwatchd" && agentResource["k8s.node.name"] as? String == "node-3")
        }
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { receiver.records.contains { $0["name"] as? String == "hangwatch_hangs_total" } })
        let metric = try #require(receiver.records.first { $0["name"] as? String == "hangwatch_hangs_total" })
        let metricResource = try #require(metric["resource"] as? [String: Any], "\(metric)")
        #expect(metricResource["k8s.pod.name"] as? String == "billing-7d9f8-x2x4q" && metricResource["k8s.node.name"] as? String == "node-3", "\(metricResource)")
        // No pod in the metric's own labels: a pod is a resource, never a label of a counter.
        #expect(!"\(metric["data"] ?? "")".contains("billing-7d9f8-x2x4q"), "\(metric)")
    }

    /// A hang under a W3C traceparent label is a log record in that trace, with that span as its
    /// parent, decoded with the official protos; a malformed traceparent is only an attribute.
    @Test func aHangUnderATraceparentIsLinkedToItsTrace() throws {
        let root = try SpoolRoot()
        let receiver = try Receiver(output: root.path + ".otlp.jsonl")
        let agent = try AgentProcess(
            root: root.path,
            arguments: ["--set", "HANGWATCHD_OTLP_ENDPOINT=http://127.0.0.1:\(receiver.port)", "--set", "HANGWATCHD_ENRICH_DELAY=0"])
        try agent.waitUntilReady()
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let malformed = ["00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "garbage"]
        let store = ReportStore(directory: root.path + "/billing", access: .sharedWithAgent)
        try store.prepare()
        let demo = try DemoReports.reports()
        try #require(demo.count >= 1 + malformed.count)
        var expected: [String: String?] = [:]
        for (index, report) in demo.enumerated() {
            var labelled = report
            labelled.id += "-traced"
            let value = index == 0 ? traceparent : index <= malformed.count ? malformed[index - 1] : nil
            labelled.labels = ["route": "GET /checkout"].merging(value.map { ["traceparent": $0] } ?? [:]) { $1 }
            expected[labelled.id] = value
            try store.write(labelled)
        }
        #expect(Eventually.holds(timeout: 30, interval: 0.02) { receiver.logs.count == demo.count }, "\(receiver.logs.count) records; \(agent.log)")
        for record in receiver.logs {
            let attributes = try #require(record["attributes"] as? [String: Any])
            let id = try #require(attributes["hangwatch.report.id"] as? String)
            let value = try #require(expected[id])
            #expect(attributes["hangwatch.label.route"] as? String == "GET /checkout")
            #expect(attributes["hangwatch.label.traceparent"] as? String == value)
            if value == traceparent {
                #expect(record["trace_id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736", "\(record)")
                #expect(record["span_id"] as? String == "00f067aa0ba902b7", "\(record)")
            } else {
                #expect(record["trace_id"] as? String == "" && record["span_id"] as? String == "", "\(value ?? "none"): \(record)")
            }
        }
        // Malformed values cost nothing but the link: the agent is still up and said nothing of them.
        #expect(agent.process.isRunning, "\(agent.log)")
        #expect(!agent.log.contains("Failed to extract span context"), "\(agent.log)")
    }

    @Test func aCollectorThatIsDownCostsRetriesAndTheQueueBoundIsCounted() throws {
        let root = try SpoolRoot()
        let collectorPort = try Self.freePort()
        let queue = 3
        let agent = try AgentProcess(
            root: root.path,
            arguments: [
                "--set", "HANGWATCHD_OTLP_ENDPOINT=http://127.0.0.1:\(collectorPort)", "--set", "HANGWATCHD_OTLP_QUEUE_SIZE=\(queue)",
                "--set", "HANGWATCHD_ENRICH=no",
            ])
        try agent.waitUntilReady()
        let port = try #require(agent.metricsPort)
        try DemoReports.copy(into: root.path, service: "billing")
        let produced = try Self.demoHangs()
        try #require(produced > queue)
        let dropped = #"reason="export""#
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { Self.value(Self.scrape(port), "hangwatch_reports_dropped_total", dropped) == Double(produced - queue) }, "\(agent.log)")
        // The agent keeps trying; the collector comes up and gets the records the queue held.
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.log.contains("OTLP export problem") && agent.log.contains("hangwatch.otel.message=\"Failed to export batch.\"") }, "\(agent.log)")
        let receiver = try Receiver(output: root.path + ".otlp.jsonl", port: collectorPort)
        #expect(Eventually.holds(timeout: 60, interval: 0.02) { receiver.logs.count == queue }, "\(receiver.logs.count); \(agent.log)")
        // Each record once: that retries never deliver twice is HangLogOutboxTests' (on scripted time).
        #expect(Self.value(Self.scrape(port), "hangwatch_reports_dropped_total", dropped) == Double(produced - queue))
    }

    /// The shipped rules (config/prometheus/hangwatch.rules.yml), loaded by a real Prometheus that
    /// scrapes a live agent, with their windows shortened by the sed the file documents (5m, 30m,
    /// 1h, 6h: 6s, 12s, 24s, 48s) and an SLO target of 360 hangs per monitored hour: a canary
    /// service monitored by a live process (this one: its heartbeat ticks) hangs once a second, a
    /// burn rate of 10, and the page does not fire; then twice a second, a burn rate of 20, and the
    /// page fires within a minute, naming the canary's service and version.
    @Test func theBurnRateAlertFiresWhenACanarysHangRateDoubles() throws {
        let root = try SpoolRoot()
        let canary = root.path + "/canary"
        try FileManager.default.createDirectory(atPath: canary, withIntermediateDirectories: true)
        let agent = try AgentProcess(
            root: root.path, arguments: ["--set", "HANGWATCHD_ENRICH=no", "--set", "HANGWATCHD_CHECK_INTERVAL=500ms"])
        try agent.waitUntilReady()
        let agentPort = try #require(agent.metricsPort, "\(agent.log)")

        // A live monitor of version 2.4.0: this process's heartbeat, ticking twice a second.
        let startTicks = try #require(ProcStat.read(pid: getpid())?.startTimeTicks)
        let heartbeatPath = canary + "/" + MonitorHeartbeat.fileName(pid: getpid())
        // Rewritten in place, as a monitor's mapped page is (never a new file: the agent follows
        // the file it found).
        let heartbeatFile = open(heartbeatPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(heartbeatFile >= 0)
        let ticking = Mutex(true)
        let ticker = Thread {
            while ticking.withLock({ $0 }) {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let page = MonitorHeartbeat(
                    pid: getpid(), startTimeTicks: startTicks, startedUnixMilliseconds: 0,
                    tickMonotonicNanoseconds: UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec),
                    tickUnixMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000), intervalMilliseconds: 500, state: .idle,
                    activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000, serviceVersion: "2.4.0")
                _ = page.encoded().withUnsafeBytes { pwrite(heartbeatFile, $0.baseAddress, $0.count, 0) }
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
        ticker.start()
        defer {
            ticking.withLock { $0 = false }
            Thread.sleep(forTimeInterval: 0.6)
            close(heartbeatFile)
        }

        // The shipped rules, as the file says to shorten them.
        let rules = try Self.shippedRules(
            beside: root.path, sed: ["-e", #"s/6h\b/48s/g; s/1h\b/24s/g; s/30m\b/12s/g; s/5m\b/6s/g"#, "-e", "s/vector(1)/vector(360)/"])
        try #require(try String(contentsOfFile: rules, encoding: .utf8).contains("vector(360)"))
        let prometheus = try LivePrometheus(root: root.path, agentPort: agentPort, rules: rules)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        /// The page alert's state for the canary ("pending", "firing"), nil while it is inactive.
        func page() -> (state: String, labels: [String: String])? {
            guard let alerts = prometheus.alerts() else { return nil }
            for alert in alerts {
                let labels = alert["labels"] as? [String: String] ?? [:]
                if labels["alertname"] == "HangWatchHangRateFastBurn" { return (alert["state"] as? String ?? "?", labels) }
            }
            return nil
        }

        // Hangs of the canary's version 2.4.0, `perSecond` a second, for `seconds`.
        var written = 0
        func hang(perSecond: Int, for seconds: Double, until stop: () -> Bool = { false }) throws {
            let store = ReportStore(directory: canary)
            let end = Date().addingTimeInterval(seconds)
            var next = Date()
            while Date() < end && !stop() {
                written += 1
                var report = ReportFixtures.report(id: "20261128T120000000Z-canary-\(getpid())-\(written)", service: "canary")
                report.serviceVersion = ServiceVersion(version: "2.4.0", source: .openTelemetry)
                _ = try store.write(report)
                next = next.addingTimeInterval(1 / Double(perSecond))
                Thread.sleep(until: next)
            }
        }
        // The baseline, a burn rate of 10: past the long window, and the page never fires.
        var firedEarly = false
        try hang(perSecond: 1, for: 30) {
            firedEarly = firedEarly || page()?.state == "firing"
            return firedEarly
        }
        #expect(!firedEarly, "the page fired at the baseline's burn rate of 10")
        let baseline = Self.value(Self.scrape(agentPort), "hangwatch_monitored_seconds_total", #"version="2.4.0""#) ?? 0
        #expect(baseline >= 20, "monitored seconds: \(baseline); \(agent.log)")
        // Doubled: fires (the long window needs about half its length of the new rate).
        let doubled = Date()
        try hang(perSecond: 2, for: 60) { page()?.state == "firing" }
        let fired = try #require(page(), "the page never became active after the rate doubled; \(written) hangs")
        #expect(fired.state == "firing")
        #expect(fired.labels["service"] == "canary" && fired.labels["version"] == "2.4.0" && fired.labels["severity"] == "page", "\(fired.labels)")
        print("[alert] the page fired \(Int(Date().timeIntervalSince(doubled))) s after the canary's hang rate doubled (\(written) hangs)")
    }

    /// A real monitor's run loop saturated below its hang threshold, end to end: the fault host's
    /// `saturate` (a timer keeps the loop busy 19 ms of every 20, in pieces of at most 50 ms under
    /// a 200 ms threshold; a heartbeat every second), a live agent reading its page, and a live
    /// Prometheus scraping the agent with the shipped rules shortened by the sed docs/fleet.md
    /// gives ("Windows, for a test": the saturation window 10m becomes 20s). Calm first (2 ms of
    /// every 20) for more of Prometheus's samples than the window holds: every sample, the agent's
    /// gauge and Prometheus's average of it under 0.5, no alert. Then saturated: the gauge over
    /// 0.8, and HangWatchLoopSaturated fires for the service within 90 s, held back by the average
    /// (by Prometheus's own timestamps, active after the loop saturated and over 5 s after the
    /// gauge first read over 0.9); no other alert is ever pending or firing, the hang rate
    /// Prometheus computes for the service reads 0 over the page's two windows, and the monitor
    /// detected no hang, wrote no report, and its longest piece stayed under the threshold. Lag
    /// below the line is exported too: the agent's `hangwatch_loop_lag_seconds` counts the loop's
    /// pieces, none over 250 ms, and the recorded 99th percentile Prometheus computes from it
    /// reads over 5 ms and at most 250 ms.
    @Test func theSaturationAlertFiresForARealLoopBusyBelowItsThreshold() throws {
        let faults = BuiltExecutable.path("hangwatch-faults")
        try #require(
            FileManager.default.isExecutableFile(atPath: faults),
            "build the fault host first: swift build --scratch-path .build --product hangwatch-faults (make test's library build makes it): \(faults)")
        let root = try SpoolRoot()
        let service = "saturated"
        let agent = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_ENRICH=no"])
        try agent.waitUntilReady()
        let agentPort = try #require(agent.metricsPort, "\(agent.log)")
        // The loop saturates once this file exists.
        let go = root.path + ".saturate"
        defer { try? FileManager.default.removeItem(atPath: go) }
        let host = try RunningExecutable(faults, ["saturate", "--reports", root.path + "/" + service, "--seconds", "600", "--file", go])
        let rules = try Self.shippedRules(beside: root.path, sed: try Self.documentedSed())
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let prometheus = try LivePrometheus(root: root.path, agentPort: agentPort, rules: rules)

        let selector = "service=\"\(service)\",source=\"runloop\""
        func gauge() -> Double? { Self.value(Self.scrape(agentPort), "hangwatch_loop_busy_ratio", selector) }
        // The recorded average, by the name the sed gave it (avg20s: its window).
        let record = "service_source:hangwatch_loop_busy_ratio:"
        let recorded = try String(contentsOfFile: rules, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.range(of: "record: " + record).map { String(line[$0.upperBound...]) }
        }
        let average = record + (try #require(recorded.first, "no \(record)… in the rules")) + "{\(selector)}"
        /// The saturation alert of the service, while it is active.
        func alert() -> [String: Any]? {
            prometheus.alerts()?.first { alert in
                let labels = alert["labels"] as? [String: String] ?? [:]
                return labels["alertname"] == "HangWatchLoopSaturated" && labels["service"] == service
            }
        }
        func state() -> String { "gauge \(gauge() ?? -1), average \(prometheus.query(average) ?? -1); \(host.errors)" }

        // Calm for 25 of Prometheus's samples, more than the shortened window holds: the calm fills
        // it. (Left at 10 minutes, the window would keep them, and minutes of saturation would be
        // needed to outweigh them, not tens of seconds.) Every one low, the agent's gauge and the
        // recorded average too; no alert.
        let calmSamples = "hangwatch_loop_busy_ratio{\(selector)}[5m]"
        var calm: (gauge: Double?, average: Double?, count: Double?) = (nil, nil, nil)
        let seen = Eventually.holds(timeout: 90, interval: 0.1) {
            calm = (gauge(), prometheus.query(average), prometheus.query("count_over_time(\(calmSamples))"))
            return calm.gauge != nil && calm.average != nil && (calm.count ?? 0) >= 25
        }
        try #require(seen, "the calm loop's ratio never reached Prometheus 25 times: \(calm); \(state()); \(agent.log)")
        let calmest = prometheus.query("max_over_time(\(calmSamples))")
        #expect(calm.gauge! < 0.5 && calm.average! < 0.5 && (calmest ?? 1) < 0.5, "calm: \(calm), highest sample \(calmest ?? -1)")
        #expect(prometheus.alerts() != nil && alert() == nil, "\(prometheus.alerts() ?? [])")

        // Saturated: the gauge rises, then the alert fires.
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        let saturated = Date()
        #expect(Eventually.holds(timeout: 30, interval: 0.1) { (gauge() ?? 0) > 0.8 }, "the gauge: \(state())")
        let fired = Eventually.value(timeout: 90, interval: 0.25, alert) { $0?["state"] as? String == "firing" }
        let firedAfter = Date().timeIntervalSince(saturated)
        let atFiring = (gauge: gauge() ?? -1, average: prometheus.query(average) ?? -1)
        let labels = try #require(fired?["labels"] as? [String: String], "the alert never fired: \(state()); \(agent.log)")
        #expect(fired?["state"] as? String == "firing")
        #expect(labels["source"] == "runloop" && labels["severity"] == "ticket", "\(labels)")

        // Held back by the average, by Prometheus's timestamps: its first ALERTS sample is after the
        // loop saturated, and well after the gauge's first sample over 0.9.
        let crossed = try #require(prometheus.samples("hangwatch_loop_busy_ratio{\(selector)}[5m]").first { $0.value > 0.9 }?.time)
        let active = try #require(prometheus.samples("ALERTS{alertname=\"HangWatchLoopSaturated\",service=\"\(service)\"}[5m]").first?.time)
        #expect(active > saturated.timeIntervalSince1970, "active at \(active), saturated at \(saturated.timeIntervalSince1970)")
        #expect(active - crossed >= 5, "active \(active - crossed) s after the gauge crossed 0.9")
        print(
            "[alert] HangWatchLoopSaturated fired \(Int(firedAfter.rounded())) s after the loop saturated, "
                + "\(Int((active - crossed).rounded())) s after the gauge first read over 0.9 (calm: gauge \(calm.gauge!); "
                + "firing: gauge \(atFiring.gauge), average \(atFiring.average))")

        // No hang: no other alert was ever pending or firing; the service was monitored (the hang
        // rules had their denominator) and its hang rate reads 0; the monitor saw none.
        let others = "count_over_time(ALERTS{alertname!=\"HangWatchLoopSaturated\"}[5m]) or count_over_time(ALERTS{service!=\"\(service)\"}[5m])"
        let otherAlerts = prometheus.result(others)
        #expect(otherAlerts != nil && otherAlerts?.isEmpty == true, "\(otherAlerts ?? [])")
        for window in ["5s", "20s"] {
            let rate = "service_version:hangwatch_hangs_per_monitored_hour:rate\(window){service=\"\(service)\"}"
            let value = Eventually.value(timeout: 20, interval: 0.1, { prometheus.query(rate) }) { $0 != nil }
            #expect(value == 0, "\(rate): \(value ?? -1)")
        }
        #expect((Self.value(Self.scrape(agentPort), "hangwatch_hangs_total", "service=\"\(service)\"") ?? 0) == 0)
        #expect(!root.names(service).contains { $0.hasPrefix("hang-") }, "\(root.names(service))")
        let page = try MonitorHeartbeat.read(path: root.path + "/" + service + "/" + MonitorHeartbeat.fileName(pid: host.pid))
        #expect(page.hangsDetected == 0)
        #expect((page.loopBusyWindow?.longestNanoseconds ?? .max) < 200_000_000, "\(String(describing: page.loopBusyWindow))")

        // Lag below the line: every piece counted, none past the threshold's bucket, and the
        // recorded percentile, by the name the sed gave it.
        let scraped = Self.scrape(agentPort)
        let pieces = Self.value(scraped, "hangwatch_loop_lag_seconds_count", selector) ?? 0
        let underThreshold = Self.value(scraped, "hangwatch_loop_lag_seconds_bucket", selector + ",le=\"0.25\"") ?? -1
        #expect(pieces > 100 && underThreshold == pieces, "\(pieces) pieces, \(underThreshold) of them under 250 ms")
        let lagRecord = "service_source:hangwatch_loop_lag_seconds:"
        let lagRecorded = try String(contentsOfFile: rules, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.range(of: "record: " + lagRecord).map { String(line[$0.upperBound...]) }
        }
        let p99Name = lagRecord + (try #require(lagRecorded.first, "no \(lagRecord)… in the rules")) + "{\(selector)}"
        let p99 = Eventually.value(timeout: 20, interval: 0.25, { prometheus.query(p99Name) }) { $0.map { $0.isFinite } ?? false }
        #expect((p99 ?? 0) > 0.005 && (p99 ?? 1) <= 0.25, "\(p99Name): \(p99 ?? -1)")
        print("[lag] \(Int(pieces)) pieces counted, 99th percentile \((p99 ?? -1) * 1000) ms")
        #expect(host.process.isRunning, "\(host.errors)")
    }

    /// docs/fleet.md's scrape config and alert rules, as written, pass promtool.
    @Test func theDocumentedScrapeConfigAndAlertRulesAreValid() throws {
        let text = try String(contentsOfFile: Self.repositoryFile("docs/fleet.md"), encoding: .utf8)
        func block(after marker: String) throws -> String {
            let start = try #require(text.range(of: marker), "\(marker) not in docs/fleet.md")
            let open = try #require(text.range(of: "```yaml\n", range: start.upperBound..<text.endIndex))
            let close = try #require(text.range(of: "```", range: open.upperBound..<text.endIndex))
            return String(text[open.upperBound..<close.lowerBound])
        }
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-fleet-docs-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (marker, file, command) in [("Scrape config", "prometheus.yml", "config"), ("Alert rules", "rules.yml", "rules")] {
            let path = directory + "/" + file
            try block(after: marker).write(toFile: path, atomically: true, encoding: .utf8)
            let (status, said) = try Self.promtool(["check", command, path])
            #expect(status == 0, "\(file): \(said)")
        }
    }
}
