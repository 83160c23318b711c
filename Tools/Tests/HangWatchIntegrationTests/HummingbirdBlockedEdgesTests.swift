import Foundation
import HangWatchReport
import Testing

/// A real Hummingbird 2 server whose jobs block in a call, threshold 100 ms, every hang its own
/// report: ten requests that block the MainActor in a nested `usleep` for 400 ms (`/layout`,
/// the main-queue source), then, on a fresh connection, ten that block their pool thread in a pipe
/// read for 300 ms (`/invoice`, the pool watch), each route on one kept-alive `wrk` connection.
/// A blocked job's start is dated by its thread's clocks (when it fell asleep in its call, by the
/// scheduler's clock, less its time awake before), not half-way between two looks (issue 58: the
/// MainActor job read +5.4 %, the first blocked request −8 %).
@Suite(.serialized) struct HummingbirdBlockedEdgesTests {
    static let wrk = "/usr/bin/wrk"

    struct Measurement: Decodable {
        var route: String
        var startedAt: Double
        var durationMs: Double
    }

    /// `count` requests of `route` on one kept-alive connection (a `wrk` script that stops its thread
    /// at the `count`th response; `wrk` itself runs on to its duration, so it is stopped once the
    /// handlers have measured that many).
    static func requests(_ count: Int, _ route: String, on server: ShopServer) throws {
        let scratch = server.scratch
        let script = scratch + "/stop-after.lua"
        try """
            local answered = 0
            function response(status, headers, body)
              answered = answered + 1
              if answered >= \(count) then wrk.thread:stop() end
            end
            """.write(toFile: script, atomically: true, encoding: .utf8)
        let load = Process()
        load.executableURL = URL(fileURLWithPath: wrk)
        load.arguments = ["-t1", "-c1", "-d60s", "-s", script, server.base + route]
        load.standardOutput = FileHandle.nullDevice
        load.standardError = FileHandle.nullDevice
        try load.run()
        let deadline = Date().addingTimeInterval(60)
        while load.isRunning, Date() < deadline, (try? measured(in: scratch).filter { $0.route == route }.count) ?? 0 < count {
            usleep(50_000)
        }
        // (SIGKILL: the test runner's signal mask, which the child inherits, may hold a SIGTERM back.)
        if load.isRunning { kill(load.processIdentifier, SIGKILL) }
        load.waitUntilExit()
    }

    static func measured(in scratch: String) throws -> [Measurement] {
        try String(contentsOfFile: scratch + "/measurements.jsonl", encoding: .utf8)
            .split(separator: "\n").map { try JSONDecoder().decode(Measurement.self, from: Data($0.utf8)) }
    }

    @Test func blockedJobsOnTheMainActorAndThePoolAreEachDatedByTheirThreadsClocks() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.wrk), "\(Self.wrk) is missing: apt-get install wrk")
        let server = try ShopServer(thresholdMs: 100, arguments: ["--every-hang-reported", "--watch-main-queue"])
        try Self.requests(10, "/layout", on: server)
        // Quiet a while (the pool watch rests), then a fresh connection: its first request is the
        // first job of its task.
        usleep(1_500_000)
        try Self.requests(10, "/invoice", on: server)
        #expect(server.stop() == 0, "\(server.log)")

        let measured = try Self.measured(in: server.scratch)
        let reports = try server.symbolicatedReports()
        // The main queue's only hangs are `/layout`'s; the pool's carry their route's label.
        for (route, source) in [("/layout", "dispatch-main"), ("/invoice", "pool-job")] {
            let mine = reports.filter { $0.source == source && (source == "dispatch-main" || $0.labels?["route"] == "GET \(route)") }
            // A blocking call cut short by a capture signal (EINTR) is no hang: at most one, left out.
            let all = measured.filter { $0.route == route }.sorted { $0.startedAt < $1.startedAt }
            let requests = all.filter { $0.durationMs >= 100 }
            #expect(all.count - requests.count <= 1, "\(route): \(all.map(\.durationMs)) ms measured")
            try #require(requests.count >= 9, "\(route): \(all.count) requests measured")
            var startErrors: [Double] = []
            var durationErrors: [Double] = []
            for (index, request) in requests.enumerated() {
                let report = try #require(
                    mine.min { abs($0.startedAt.timeIntervalSince1970 - request.startedAt) < abs($1.startedAt.timeIntervalSince1970 - request.startedAt) },
                    "\(route): no report; \(reports.map { "\($0.source) \($0.durationMs)" })")
                let startError = (report.startedAt.timeIntervalSince1970 - request.startedAt) * 1000
                try #require(abs(startError) < 100, "\(route) request \(index): no report of its own (nearest starts \(startError) ms off)")
                startErrors.append(startError)
                durationErrors.append(report.durationMs - request.durationMs)
                // The promise: within 5 % of what the handler measured. A blocked pool job's end is
                // between its last sighting and the latest its thread's awake time allows, half-way
                // (docs/sources.md): off by up to half the gap between two looks, 12.5 ms at this
                // threshold; more when a look came late (the watch's thread waits for a CPU too).
                let gaps = zip(report.samples, report.samples.dropFirst()).map { $1.offsetMs - $0.offsetMs }
                let allowed = max(0.05 * request.durationMs, source == "pool-job" ? (gaps.max() ?? 0) / 2 + 2 : 0)
                // (Each sample's offset, state and clocks in the message: what dated the edges.)
                let looks = report.samples.map { "\($0.offsetMs) \($0.state ?? "?") cpu \($0.cpuMs ?? -1) queue \($0.runQueueMs ?? -1)" }
                #expect(
                    abs(report.durationMs - request.durationMs) <= allowed,
                    "\(route) request \(index): reported \(report.durationMs) ms for \(request.durationMs) ms measured (start \(startError) ms off, \(report.edges ?? "-"); samples: \(looks))")
            }
            // Dated by the threads' clocks: the typical start within a few milliseconds of the
            // handler's own (a job waiting for a CPU once woken counts from its wake). Half-way between
            // two looks put them up to 25 ms (the MainActor's, looks 50 ms apart) and 12.5 ms (the
            // pool's) off, 6 to 12 ms typically. A debug build in a clean-clone run (2026-12-07) read
            // a median of 3.5 ms for the MainActor's (half its starts 4.4 to 6.2 ms off): the bound
            // is 5 ms, still under a third of the halfway estimate's typical error.
            let median = startErrors.map(abs).sorted()[startErrors.count / 2]
            #expect(median <= 5, "\(route): starts off by \(startErrors) ms")
            let rounded = { (values: [Double]) in values.map { ($0 * 10).rounded() / 10 } }
            print("[hummingbird] \(route) (\(source)): reported - measured \(rounded(durationErrors)) ms; starts off by \(rounded(startErrors)) ms")
        }
    }
}
