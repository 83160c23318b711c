import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// A real Hummingbird 2 server (`hangwatch-hummingbird-service`) with 200 long-poll requests
/// parked on continuations (`GET /orders/:id/wait`): no thread is busy, the requests are its tasks.
/// `hangwatch dump --tasks` shows each one's chain up to the route's handler and its `route` label
/// (the service's labels middleware puts it in effect for the request's task).
@Suite(.serialized) struct HummingbirdTaskDumpTests {
    static var cli: String { BuiltExecutable.path("hangwatch") }

    /// `GET path` on a connection of its own, left open without reading the answer (a long poll).
    static func openRequest(port: Int, path: String) -> Int32 {
        let connection = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(connection, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(connection)
            return -1
        }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
        return connection
    }

    static func get(port: Int, path: String) -> String {
        let connection = openRequest(port: port, path: path)
        guard connection >= 0 else { return "" }
        defer { close(connection) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !String(decoding: answer, as: UTF8.self).contains("\r\n\r\n") || !answer.contains(UInt8(ascii: "\n")) {
            let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            answer += buffer[..<count]
            let text = String(decoding: answer, as: UTF8.self)
            if let body = text.range(of: "\r\n\r\n"), text[body.upperBound...].contains("\n") { break }
        }
        let text = String(decoding: answer, as: UTF8.self)
        return text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
    }

    @Test func twoHundredLongPollsAreTasksWhoseChainsReachTheHandlerWithTheirRoute() throws {
        let binary = HummingbirdServiceTests.service()
        try #require(FileManager.default.isExecutableFile(atPath: binary), "\(binary) is not built (swift build --build-tests)")
        let scratch = FileManager.default.temporaryDirectory.path + "/hangwatch-hb-tasks-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let reports = scratch + "/reports"
        let server = try RunningExecutable(binary, ["--reports", reports, "--port", "0", "--port-file", scratch + "/port"])
        defer {
            server.signal(SIGKILL)
            _ = server.finish(within: 10)
        }
        let port = try #require(
            Eventually.value(timeout: 60, { (try? String(contentsOfFile: scratch + "/port", encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } },
                until: { $0 != nil }) ?? nil, "the service did not start: \(server.errors)")
        let connections = (0..<200).map { Self.openRequest(port: port, path: "/orders/\($0)/wait") }
        defer { for connection in connections where connection >= 0 { close(connection) } }
        #expect(connections.allSatisfy { $0 >= 0 })
        #expect(Eventually.holds(timeout: 30) { Self.get(port: port, path: "/orders/waiting") == "200" }, "\(Self.get(port: port, path: "/orders/waiting")) parked")
        let pid = server.pid
        let heartbeat = reports + "/" + MonitorHeartbeat.fileName(pid: pid)
        try #require(Eventually.holds(timeout: 20) { ((try? MonitorHeartbeat.read(path: heartbeat))?.captureSignal ?? 0) != 0 })

        let json = try ExecutableRun.run(Self.cli, ["dump", "--tasks", String(pid), "--dir", reports, "--json"], timeout: 90)
        #expect(json.status == 0, "\(json.errors)")
        let report = try HangReport.makeDecoder().decode(HangReport.self, from: Data(json.output.utf8))
        let dump = try #require(report.tasks)
        let parked = dump.tasks.filter { $0.awaits?.kind == "continuation" && $0.labels?["route"]?.contains("/orders/") == true }
        #expect(parked.count == 200, "\(parked.count) of \(dump.tasks.count) tasks")
        func names(_ task: HangReport.TaskEntry) -> [String] {
            task.chain.compactMap { report.frames.indices.contains($0) ? report.frames[$0].symbol.map(FrameNamingProbe.short) : nil }
        }
        for task in parked {
            let chain = names(task)
            // The long poll's own functions (under withCheckedContinuation, a frame of its own in a
            // debug build, inlined in a release one), then the route's handler (the closure given
            // to `get` in the service's run()), then Hummingbird.
            #expect(chain.prefix(2).contains { $0.hasSuffix("Orders.awaitCarrier(order:)") } && chain.contains { $0.hasSuffix("Orders.waitForShipment(order:)") }, "\(chain)")
            #expect(chain.contains { $0.contains("closure") && $0.contains("HummingbirdService.run()") }, "the handler: \(chain)")
            #expect(chain.contains { $0.contains("HangLabelsMiddleware.handle") }, "the labels' middleware: \(chain)")
            #expect(task.chainEnd == "complete", "\(task.chainEnd): \(chain)")
        }
        let routes = Set(parked.compactMap { $0.labels?["route"] })
        #expect(routes.count == 1 && routes.first?.hasPrefix("GET /orders/") == true, "\(routes)")

        let text = try ExecutableRun.run(Self.cli, ["dump", "--tasks", String(pid), "--dir", reports, "--color", "never"], timeout: 90)
        let lines = text.output.split(separator: "\n").map(String.init)
        let fold = try #require(lines.firstIndex { $0.hasPrefix("  200 tasks suspended, on a continuation") }, "\(text.output.prefix(3000))")
        #expect(lines[(fold + 1)...].prefix(2).contains { $0.hasSuffix("Orders.awaitCarrier(order:)") }, "\(lines[fold...].prefix(6))")
        #expect(lines[fold...].prefix(30).contains { $0.hasPrefix("      labels: route=\(routes.first ?? "?") ×200") }, "\(lines[fold...].prefix(30))")
        #expect(Self.get(port: port, path: "/orders/release") == "200")
    }
}
