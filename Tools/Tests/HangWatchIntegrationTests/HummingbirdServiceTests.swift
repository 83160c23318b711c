import Foundation
import HangWatchReport
import HangWatchSymbolication
import Testing

/// A real Hummingbird 2 server (`hangwatch-hummingbird-service`, built next to this test) watched
/// as the README shows, under `wrk` on loopback: four routes block their pool thread for 300 ms in
/// four ways (threshold 250 ms), one blocks an event loop, and `/hello` keeps both loops and the
/// pool busy all along. What the reports say is checked against what each handler measured itself.
@Suite(.serialized) struct HummingbirdServiceTests {
    /// A measurement the service wrote: one request's blocking step, as the handler timed it.
    struct Measurement: Decodable {
        var route: String
        var startedAt: Double
        var durationMs: Double
    }

    /// Each pool route: its blocking function, and the async callers that must name the request.
    static let poolRoutes: [(route: String, blocking: String, callers: [String], doing: String)] = [
        ("/quote", "Work.spin(milliseconds:)", ["Shop.priceBasket(measurements:)", "Shop.quote(measurements:)"], "computing"),
        ("/invoice", "Work.readPipe(milliseconds:)", ["Shop.fetchInvoiceBytes(measurements:)", "Shop.downloadInvoice(measurements:)"], "read"),
        ("/checkout", "Work.sleep(milliseconds:)", ["Shop.reserveStock(measurements:)", "Shop.checkout(measurements:)"], "sleep"),
        ("/cart", "Work.waitForLock(milliseconds:)", ["Shop.lockCart(measurements:)", "Shop.updateCart(measurements:)"], "lock"),
    ]

    static let wrk = "/usr/bin/wrk"

    static func service() -> String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return (executable as NSString).deletingLastPathComponent + "/hangwatch-hummingbird-service"
    }

    /// Runs `wrk` to the end; its output.
    static func load(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: wrk)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test func everyBlockingRouteGetsOneReportNamingItsHandlerWithTheHandlersOwnDuration() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.wrk), "\(Self.wrk) is missing: apt-get install wrk")
        let binary = Self.service()
        try #require(FileManager.default.isExecutableFile(atPath: binary), "\(binary) is not built (swift build --build-tests)")
        let scratch = FileManager.default.temporaryDirectory.path + "/hangwatch-hummingbird-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let reports = scratch + "/reports"

        let server = Process()
        server.executableURL = URL(fileURLWithPath: binary)
        server.arguments = [
            "--reports", reports, "--threshold-ms", "250", "--port", "0", "--port-file", scratch + "/port",
            "--measurements", scratch + "/measurements.jsonl",
        ]
        // The monitor's debug log: each pool job seen for half a threshold or more that got no
        // report says why (printed below: a missed request is explained in the output).
        server.environment = ProcessInfo.processInfo.environment.merging(["SHOP_HANGWATCH_LOG_LEVEL": "debug"]) { $1 }
        server.standardOutput = FileHandle.nullDevice
        server.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: { FileManager.default.createFile(atPath: scratch + "/log", contents: nil); return scratch + "/log" }()))
        try server.run()
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        var port: Int?
        let deadline = Date().addingTimeInterval(60)
        while port == nil, Date() < deadline, server.isRunning {
            port = (try? String(contentsOfFile: scratch + "/port", encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if port == nil { usleep(50_000) }
        }
        let log = { (try? String(contentsOfFile: scratch + "/log", encoding: .utf8)) ?? "" }
        let bound = try #require(port, "the service did not start: \(log())")
        let base = "http://127.0.0.1:\(bound)"

        // Quick requests on every connection all along; each blocking route, one connection kept alive, for 2 s.
        let routes = Self.poolRoutes.map(\.route) + ["/receipt"]
        let background = try Self.load(["-t1", "-c4", "-d\(routes.count * 2 + 3)s", base + "/hello"])
        // A second of quick requests first, as a service has served before its first slow one: a
        // pool thread is watched from the first attach job it runs (docs/sources.md), and a fresh
        // server's thread whose very first job is a slow request is not seen in that job.
        sleep(1)
        // Each route's requests carry a trace context of their own (a W3C traceparent header).
        func traceparent(_ route: String) -> String {
            let index = routes.firstIndex(of: route) ?? 0
            return "00-\(String(repeating: "ab", count: 15))0\(index + 1)-\(String(repeating: "cd", count: 7))0\(index + 1)-01"
        }
        for route in routes {
            let blocking = try Self.load(["-t1", "-c1", "-d2s", "-H", "traceparent: \(traceparent(route))", base + route])
            blocking.waitUntilExit()
            #expect(blocking.terminationStatus == 0, "wrk \(route)")
        }
        background.waitUntilExit()
        // The process's count of calls its captures cut short, before it stops (a request cut
        // short below must be one of them).
        let heartbeat = reports + "/" + MonitorHeartbeat.fileName(pid: server.processIdentifier)
        let callsCutShort = try MonitorHeartbeat.read(path: heartbeat).callsCutShort
        kill(server.processIdentifier, SIGTERM)
        server.waitUntilExit()
        #expect(server.terminationStatus == 0, "\(log())")

        let measured = try String(contentsOfFile: scratch + "/measurements.jsonl", encoding: .utf8)
            .split(separator: "\n").map { try JSONDecoder().decode(Measurement.self, from: Data($0.utf8)) }
        // The near misses (a pool job seen for half a threshold or more that got no report, logged
        // with why), each with the request it was: the one that started closest to it.
        let nearMisses = log().split(separator: "\n").filter { $0.contains("pool job not reported") }.map { line in
            let started = line.split(separator: " ").first { $0.hasPrefix("hangwatch.startedAt=") }
                .flatMap { Double($0.dropFirst("hangwatch.startedAt=".count)) }
            let request = started.flatMap { started in measured.min { abs($0.startedAt - started) < abs($1.startedAt - started) } }
            print("[hummingbird] near miss: \(request.map { "\($0.route), \($0.durationMs) ms measured: " } ?? "")\(line)")
            return (route: request?.route, line: line)
        }
        let symbolicator = Symbolicator()
        let all = try ReportStore(directory: reports).list().map { stored -> HangReport in
            var report = try ReportReader().read(path: stored.path)
            symbolicator.symbolicate(&report)
            return report
        }
        func names(_ report: HangReport, async: Bool) -> [String] {
            (report.heaviestStack?.frames ?? []).filter { $0.isAsyncCaller == async }.compactMap { frame in
                frame.symbol.map { FrameNamingProbe.short($0) }
            }
        }

        // Every blocking call cut short is one the monitor counted (the process's count).
        let allCutShort = measured.filter { request in Self.poolRoutes.contains { $0.route == request.route } && request.durationMs < 100 }
        #expect(Int(callsCutShort) >= allCutShort.count, "\(allCutShort.count) requests cut short, the monitor counted \(callsCutShort)")
        for (route, blocking, callers, doing) in Self.poolRoutes {
            // A request whose blocking call returned at once is no hang: a sleep cut short (EINTR)
            // by a capture signal sent to the thread on a CPU that landed as it entered the call
            // (docs/reliability.md: the one race of capturing by signal; seen once, `/checkout`).
            // Printed, at most one per route, counted by the monitor, and left out of the counts below.
            let cutShort = measured.filter { $0.route == route && $0.durationMs < 100 }
            #expect(cutShort.count <= 1, "\(route): \(cutShort.map(\.durationMs)) ms measured")
            for request in cutShort { print("[hummingbird] \(route): a blocking call cut short, \(request.durationMs) ms measured: no hang") }
            let requests = measured.filter { $0.route == route && $0.durationMs >= 100 }
            try #require(requests.count >= 3, "\(route): \(requests.count) requests")
            let longest = requests.map(\.durationMs).max() ?? 0
            // One report for the route (its later requests are repeats of it), naming the
            // blocking function and, as async callers, the step and the handler.
            let mine = all.filter { $0.source == "pool-job" && names($0, async: false).contains(blocking) }
            try #require(mine.count == 1, "\(route): \(mine.map(\.id)); all: \(all.map { names($0, async: false).prefix(4) })")
            let report = mine[0]
            // The middleware's labels: the route matched, and the request's trace context.
            #expect(
                report.labels == ["route": "GET \(route)", "traceparent": traceparent(route)],
                "\(route): \(report.labels ?? [:]); \(log().split(separator: "\n").filter { $0.contains(report.id) }.joined(separator: "\n"))")
            // The step runs now (a frame of the thread's stack); the handler that awaited it is
            // the first async caller.
            let physical = names(report, async: false)
            let asyncNames = names(report, async: true)
            #expect(physical.contains(callers[0]), "\(route): \(physical)")
            #expect(asyncNames.first == callers[1], "\(route): async callers \(asyncNames)")
            // Up to the pool's job loop and the thread's start, nothing left out.
            let stack = report.heaviestStack.flatMap { report.stack(at: $0.stack) }
            #expect(stack?.truncated == false, "\(route): truncated (\(stack?.truncation ?? "-")): \(physical)")
            #expect(VaporServiceTests.holdsInOrder(physical, [blocking, callers[0], "swift_job_run"]), "\(route): \(physical)")
            // At most one hang per request. A 300 ms job clears the 250 ms threshold by one look
            // interval (50 ms), and its sampled edges are each off by up to half of the gap between
            // two looks (more when a look comes late: the watch's thread waits for a CPU like any
            // other): now and then a request reads as just under the threshold and is no hang (one
            // in a route: about once in ten runs; two in one route: once in a clean-clone run on
            // 2026-11-25, `/cart`, 5 of 7; a computing one read 250.0 ms for 303.5 ms measured under
            // two CPU hogs). A computing job's edges are exact only where its thread slept right
            // before or after it; this load keeps the pool busy. Each such request must be among
            // the near misses the monitor logged: none goes missing unexplained.
            // A blocking request is otherwise always a hang of its own (the thread parks after
            // it). Two computing requests of one kept-alive connection that run back to back on a
            // pool thread that never parks between them read as one hang covering both
            // (docs/sources.md): fewer hangs, the same time, so a computing route's requests
            // covered are counted by time.
            let hangs = 1 + (report.repeats?.count ?? 0)
            #expect(hangs <= requests.count, "\(route): \(hangs) hangs for \(requests.count) requests")
            let maxReported = max(report.durationMs, report.repeats?.maxDurationMs ?? 0)
            let totalReported = report.durationMs + (report.repeats?.totalDurationMs ?? 0)
            let totalMeasured = requests.map(\.durationMs).reduce(0, +)
            let shortest = requests.map(\.durationMs).min() ?? 0
            // Never more time than the requests took; each hang at least its request less a look interval.
            #expect(totalReported <= totalMeasured * 1.05, "\(route): \(totalReported) ms reported in all, \(totalMeasured) ms measured")
            #expect(totalReported >= Double(hangs) * (shortest - 60), "\(route): \(totalReported) ms reported in all for \(hangs) hangs")
            let covered = doing == "computing" ? Int((totalReported / (totalMeasured / Double(requests.count))).rounded()) : hangs
            let missed = requests.count - covered
            let explained = nearMisses.filter { $0.route == route }.count
            #expect(missed <= 2, "\(route): \(covered) of \(requests.count) requests reported")
            #expect(explained >= missed, "\(route): \(missed) requests not reported, \(explained) near misses logged")
            // The first hang's duration against the request it was: the edges are found by looks
            // 50 ms apart, each off by at most half of that (a computing job's by its thread's CPU
            // time, closer). A blocking request is always its own hang (the thread parks after
            // it); computing ones on one kept-alive connection may run back to back on a pool
            // thread that never parks (this load keeps the pool busy), and then one hang covers
            // k whole requests, its edges still right.
            let first = try #require(requests.min { abs($0.startedAt - report.startedAt.timeIntervalSince1970) < abs($1.startedAt - report.startedAt.timeIntervalSince1970) })
            let merged = max(1, (report.durationMs / first.durationMs).rounded())
            #expect(merged == 1 || doing == "computing", "\(route): \(report.durationMs) ms reported, \(first.durationMs) ms measured")
            // One hang: each edge within half a look interval (25 ms) of the truth, at worst.
            #expect(abs(report.durationMs - merged * first.durationMs) <= 50 + 0.02 * first.durationMs, "\(route): \(report.durationMs) ms reported, \(first.durationMs) ms measured")
            print("[hummingbird] \(route) (\(doing)): reported \(report.durationMs) ms for \(first.durationMs) ms measured\(merged > 1 ? " (\(Int(merged)) requests back to back)" : ""); \(hangs) hangs for \(requests.count) requests (\(missed) missed, \(explained) near misses), \(Int(totalReported)) ms in all for \(Int(totalMeasured)) ms measured; longest reported \(maxReported) ms, measured \(longest) ms")
        }
        // The event-loop route: every block seen, from the loop's wake to the ping's answer
        // (exact edges: the watcher sleeps on the loop's epoll instance), naming the step that
        // blocked the loop. One report per loop (each loop has its own monitor), later blocks repeats.
        let blocks = measured.filter { $0.route == "/receipt" }
        let loopReports = all.filter { $0.source == "nio-eventloop" }
        for report in loopReports {
            #expect(names(report, async: false).contains("Shop.formatReceiptOnLoop(measurements:)"), "\(names(report, async: false))")
            // The step, the closure the loop ran, and the loop, in order, nothing left out.
            let stack = report.heaviestStack.flatMap { report.stack(at: $0.stack) }
            #expect(stack?.truncated == false, "/receipt: truncated (\(stack?.truncation ?? "-"))")
            #expect(
                VaporServiceTests.holdsInOrder(
                    names(report, async: false), ["Shop.formatReceiptOnLoop(measurements:)", "closure", "SelectableEventLoop.run()"]),
                "/receipt: \(names(report, async: false))")
            // Work handed to an event loop runs outside the handler's labels (docs: what labels cover).
            #expect(report.labels == nil, "\(report.labels ?? [:])")
            #expect(report.thread.name?.hasPrefix("NIO-ELT") == true)
            let block = try #require(blocks.min { abs($0.startedAt - report.startedAt.timeIntervalSince1970) < abs($1.startedAt - report.startedAt.timeIntervalSince1970) })
            // (Sampled when the loop's wake was found by a look at the idle loop: to a quarter threshold.)
            let allowed = report.edges == "sampled" ? report.thresholdMs / 4 : 0.05 * block.durationMs
            #expect(abs(report.durationMs - block.durationMs) <= allowed, "/receipt (\(report.edges ?? "-")): \(report.durationMs) ms reported, \(block.durationMs) ms measured")
            print("[hummingbird] /receipt (event loop): reported \(report.durationMs) ms for \(block.durationMs) ms measured, detected \(report.detectedAt.timeIntervalSince(report.startedAt) * 1000) ms after its start")
        }
        let loopHangs = loopReports.map { 1 + ($0.repeats?.count ?? 0) }.reduce(0, +)
        #expect(loopHangs >= blocks.count - 1 && loopHangs <= blocks.count, "/receipt: \(loopHangs) hangs for \(blocks.count) blocks")
        print("[hummingbird] /receipt: \(blocks.count) requests blocked a loop; \(loopHangs) hangs in \(loopReports.count) loop reports")
    }
}

/// The names `hangwatch show` prints (module dropped, labels only), without the async mark.
enum FrameNamingProbe {
    static func short(_ symbol: String) -> String {
        let name = FrameNaming.displayName(HangReport.Frame(address: "0x0", image: nil, offset: nil, symbol: symbol), images: [])
        return name.hasSuffix(" (async)") ? String(name.dropLast(" (async)".count)) : name
    }
}
