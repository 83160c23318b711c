import Foundation
import HangWatchReport
import HangWatchSymbolication
import Testing

/// A real Vapor 4 server (`hangwatch-vapor-service`; its release build in `make stress`, its debug
/// build in `make test`: `service()`) watched as a user would
/// (`HangMonitor.watch(app.eventLoopGroup, …)`, no `EventLoopTicks`), under `wrk` on loopback:
/// three synchronous routes block the event loop that runs them for 300 ms (threshold 250 ms) in
/// `read`, in `pthread_mutex_lock` and in a one-line `usleep` wrapper, while `/hello` keeps the loops
/// busy. A blocked loop is never signalled: its stack is walked from `/proc`'s stack pointer and
/// program counter, and must still name the handler and every caller up to NIO's event loop, in
/// order, in a release build too (merged functions, llhttp's callbacks through a function pointer,
/// tail calls), each hang timed against what the handler measured itself.
@Suite(.serialized) struct VaporServiceTests {
    /// A measurement the service wrote: one request's blocking step, as the handler timed it.
    struct Measurement: Decodable {
        var route: String
        var startedAt: Double
        var durationMs: Double
    }

    /// Each blocking route, and the frames its report must name, innermost first (as `hangwatch
    /// show` names them): the blocking function, the handler, the route's closure, Vapor's
    /// responder and server handler, NIO's HTTP decoder (llhttp calls back into Swift), the loop.
    static let routes: [(route: String, chain: [String], blockedIn: String)] = [
        ("/catalog", ["Blocking.readReply(milliseconds:)", "Store.fetchCatalog(_:)"] + framework, "read"),
        ("/cart", ["Blocking.lockShelf(_:milliseconds:)", "Store.updateCart(_:)"] + framework, "futex"),
        ("/throttle", ["usleep", "Blocking.nap(microseconds:)", "Store.throttle(_:)"] + framework, "clock_nanosleep"),
    ]

    static let framework = [
        "closure", "BasicResponder.respond(to:)", "DefaultResponder.respond(to:)", "HTTPServerHandler.channelRead(context:data:)",
        "c_nio_llhttp__internal__run", "ByteToMessageHandler.channelRead(context:data:)", "SelectableEventLoop.run()",
    ]

    static let wrk = "/usr/bin/wrk"

    /// The service, built with Vapor (the package's `Vapor` trait). `HANGWATCH_VAPOR_BUILD=debug`
    /// (`make test`, whose tools' build has the trait): the debug build beside these tests, whose
    /// release build alone would take a third of `make test`. Otherwise the release build (`make
    /// test-release-vapor`, in `make stress`; built here in a scratch path of its own when missing:
    /// SwiftPM holds the main one while the tests run).
    static func service() throws -> String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        let debug = URL(fileURLWithPath: (executable as NSString).deletingLastPathComponent)  // .build/<triple>/debug
        if ProcessInfo.processInfo.environment["HANGWATCH_VAPOR_BUILD"] == "debug" {
            let path = debug.appendingPathComponent("hangwatch-vapor-service").path
            try #require(FileManager.default.isExecutableFile(atPath: path), "build the tools with --enable-all-traits first (\(path))")
            return path
        }
        let release = debug.deletingLastPathComponent().appendingPathComponent("release/hangwatch-vapor-service").path
        if FileManager.default.isExecutableFile(atPath: release) { return release }
        // (The tools build into the repository's scratch path: <repository>/.build/<triple>/debug.)
        let repository = debug.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let tools = repository.appendingPathComponent("Tools")
        let scratch = tools.appendingPathComponent(".build-release-vapor")
        let build = Process()
        build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        build.arguments = [
            "swift", "build", "-c", "release", "--traits", "Vapor", "--product", "hangwatch-vapor-service", "--package-path", tools.path,
            "--scratch-path", scratch.path,
        ]
        try build.run()
        build.waitUntilExit()
        let built = scratch.appendingPathComponent("release/hangwatch-vapor-service").path
        try #require(FileManager.default.isExecutableFile(atPath: built), "the release service could not be built")
        return built
    }

    static func load(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: wrk)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Whether `names` (innermost first) hold `chain` in order (other frames may lie between).
    static func holdsInOrder(_ names: [String], _ chain: [String]) -> Bool {
        var position = names.startIndex
        for link in chain {
            guard let found = names[position...].firstIndex(where: { $0 == link || link == "closure" && $0.hasPrefix("closure") })
            else { return false }
            position = found + 1
        }
        return true
    }

    @Test func everyBlockedRouteNamesItsHandlerAndCallersUpToTheEventLoop() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.wrk), "\(Self.wrk) is missing: apt-get install wrk")
        let binary = try Self.service()
        let scratch = FileManager.default.temporaryDirectory.path + "/hangwatch-vapor-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let reports = scratch + "/reports"
        try #require(FileManager.default.createFile(atPath: scratch + "/log", contents: nil), "cannot create \(scratch)/log")

        let server = Process()
        server.executableURL = URL(fileURLWithPath: binary)
        server.arguments = [
            "--reports", reports, "--threshold-ms", "250", "--port", "0", "--port-file", scratch + "/port",
            "--measurements", scratch + "/measurements.jsonl",
        ]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + "/log"))
        try server.run()
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let log = { (try? String(contentsOfFile: scratch + "/log", encoding: .utf8)) ?? "" }
        var port: Int?
        let deadline = Date().addingTimeInterval(60)
        while port == nil, Date() < deadline, server.isRunning {
            port = (try? String(contentsOfFile: scratch + "/port", encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if port == nil { usleep(50_000) }
        }
        let base = "http://127.0.0.1:\(try #require(port, "the service did not start: \(log())"))"
        // Every loop's epoll instance watched (each loop seen idle once) before the load begins, as
        // in a service that started before its traffic did: the edges are then the loops' own.
        var watched = ""
        while watched != "exact", Date() < deadline {
            watched = (try? String(contentsOf: URL(string: base + "/watch")!, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if watched != "exact" { usleep(50_000) }
        }
        #expect(watched == "exact", "the loops' epoll instances were not learnt: \(watched)")

        // Quick requests on every connection all along; each blocking route, one connection kept alive, for 2 s.
        let background = try Self.load(["-t1", "-c4", "-d\(Self.routes.count * 2 + 3)s", base + "/hello"])
        sleep(1)
        for (route, _, _) in Self.routes {
            let blocking = try Self.load(["-t1", "-c1", "-d2s", base + route])
            blocking.waitUntilExit()
            #expect(blocking.terminationStatus == 0, "wrk \(route)")
        }
        background.waitUntilExit()
        kill(server.processIdentifier, SIGTERM)
        server.waitUntilExit()
        #expect(server.terminationStatus == 0, "\(log())")

        let measured = try String(contentsOfFile: scratch + "/measurements.jsonl", encoding: .utf8)
            .split(separator: "\n").map { try JSONDecoder().decode(Measurement.self, from: Data($0.utf8)) }
        let symbolicator = Symbolicator()
        let all = try ReportStore(directory: reports).list().map { stored -> HangReport in
            var report = try ReportReader().read(path: stored.path)
            symbolicator.symbolicate(&report)
            return report
        }
        func names(_ frames: [HangReport.Frame]) -> [String] { frames.compactMap { $0.symbol.map(FrameNamingProbe.short) } }

        // No report but the blocking routes': the quick requests on every loop all along, watched
        // as a Vapor user would (no EventLoopTicks), never make one.
        let unexplained = all.filter { report in
            !Self.routes.contains { names(report.heaviestStack?.frames ?? []).contains($0.chain[0]) }
        }
        #expect(unexplained.isEmpty, "reports of no blocking route: \(unexplained.map { "\($0.durationMs) ms \($0.context.verdict): \(names($0.heaviestStack?.frames ?? []).prefix(4))" })")

        for (route, chain, blockedIn) in Self.routes {
            let requests = measured.filter { $0.route == route }
            try #require(requests.count >= 3, "\(route): \(requests.count) requests")
            // One report for the route (each loop has its own monitor; they share one writer, so the
            // same culprit on two loops is one report with its repeats).
            let mine = all.filter { $0.source == "nio-eventloop" && names($0.heaviestStack?.frames ?? []).contains(chain[0]) }
            try #require(mine.count == 1, "\(route): \(mine.map(\.id)); all: \(all.map { names($0.heaviestStack?.frames ?? []).prefix(4) })")
            let report = mine[0]
            let heaviest = try #require(report.heaviestStack)
            let stack = try #require(report.stack(at: heaviest.stack))
            let shown = names(heaviest.frames)
            // Complete (no frame the evidence could not prove was left out), and the chain in order.
            #expect(!stack.truncated, "\(route): truncated (\(stack.truncation ?? "")): \(shown)")
            #expect(Self.holdsInOrder(shown, chain), "\(route): \(shown)")
            #expect(shown.last?.contains("clone") == true, "\(route): not up to the thread's start: \(shown.suffix(3))")
            // Every sample's stack of the report, not only the heaviest, is complete.
            #expect(report.stacks.allSatisfy { !$0.truncated }, "\(route): \(report.stacks.map { $0.truncation ?? "complete" })")
            #expect(report.context.blockedIn == blockedIn, "\(route): blocked in \(report.context.blockedIn ?? "-")")
            #expect(report.capture.samplesTaken > 0)
            // Every request a hang of its own (the loop goes back to epoll_wait after each).
            let hangs = 1 + (report.repeats?.count ?? 0)
            #expect(hangs >= requests.count - 1 && hangs <= requests.count, "\(route): \(hangs) hangs for \(requests.count) requests")
            // The first hang against the request it was: exact edges. Under load the start is the
            // last boundary before the block (docs/sources.md): one look interval (a 25th of the
            // threshold) early at most, plus a step of the coarse clock (4 ms); the end is the
            // ping's answer, late by what the busy machine makes the loop wait for a CPU. (Since answers
            // are boundaries on the fine clock, 2026-12-02: the first /catalog hang reads 303-312 ms
            // for 300 in six runs, two beside a busy CPU, the others 300-305; every one of them
            // early at the start, none late at the end by more than 0.2 ms. Before, on the coarse
            // clock: 311-317 and 304-310, and a CI run 324 ms.)
            let first = try #require(requests.min { abs($0.startedAt - report.startedAt.timeIntervalSince1970) < abs($1.startedAt - report.startedAt.timeIntervalSince1970) })
            let allowed = report.edges == "sampled" ? report.thresholdMs / 4 : report.thresholdMs / 25 + 4 + 0.03 * first.durationMs
            // Where the difference is: the report's start before the handler's, its end after it (ms).
            let early = (first.startedAt - report.startedAt.timeIntervalSince1970) * 1000
            let late = report.durationMs - first.durationMs - early
            let split = String(format: "start %.1f ms early, end %.1f ms late", early, late)
            #expect(abs(report.durationMs - first.durationMs) <= allowed, "\(route) (\(report.edges ?? "-")): \(report.durationMs) ms reported, \(first.durationMs) ms measured (\(split))")
            print("[vapor] \(route): \(shown.count) frames, \(stack.truncated ? "truncated: \(stack.truncation ?? "")" : "complete"); \(hangs) hangs for \(requests.count) requests; reported \(report.durationMs) ms for \(first.durationMs) ms measured (\(report.edges ?? "-") edges; \(split)); repeats \(report.repeats.map { String(format: "%.1f", $0.totalDurationMs / Double(max(1, $0.count))) } ?? "-") ms on average for \(String(format: "%.1f", requests.map(\.durationMs).reduce(0, +) / Double(requests.count))) ms")
        }
    }
}
