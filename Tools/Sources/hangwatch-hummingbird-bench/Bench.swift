import Foundation

/// The cost of watching a real Hummingbird 2 server: `/hello` under `wrk` on loopback, the
/// service (built next to this binary) started unwatched and watched (its event loops and the
/// cooperative pool, threshold 250 ms) in turn, in alternating order each round; each server gets
/// a second of load before the measured run (its threads started, the monitor's settled). Prints
/// each round, the medians and the median of the per-round ratios (watched / unwatched
/// requests/s) with their quartiles: single runs on this kind of machine vary by ±5 % even
/// against one server, so the ratio is only as good as its number of rounds.
///
/// Then the same server, watched and not in turn (`--toggle-watch`): `--pairs` pairs of 0.5 s
/// windows within one `wrk` run, their ratios' median and quartiles. A watched window starts 0.25 s
/// after every loop's epoll instance is watched (`GET /watch` says `exact`; until then a loop is
/// pinged, which costs less); many short windows, because the load's own drift over seconds is
/// what spreads single ratios (the same build measured 0.979 to 0.996 with 60 pairs). Three such
/// runs: as shipped (the group made with `EventLoopTicks`: the goal's line), with the boundaries
/// under load from a ping at each look (no delegate: the default set-up a Vapor or Hummingbird
/// user gets), and the loops alone (the pool watch
/// off: its cost is the difference from the first). The goal's line takes its pairs from two
/// servers in turn (`--pairs` each), because one server's figure also varies from start to start
/// (four runs of 48 pairs read 0.972 to 0.998 on one day) more than its pairs do; it prints the
/// median with its 95 % confidence interval (distribution-free: order statistics).
///
/// `--vapor`: paired windows against the Vapor 4 service instead (its group made by Vapor, so
/// watched in the default set-up, no `EventLoopTicks`), one line from two servers, with the goal.
/// Vapor's loops never wait under this load, so its watch is toggled between windows with no load
/// and each window gets a `wrk` run of its own (`loadInTurnRatios`).
///
///   hangwatch-hummingbird-bench [--rounds 10] [--seconds 3] [--pairs 48] [--paired-only] [--goal-only] [--rounds-only] [--vapor]
///   (release build: make bench)
///
/// `--paired-only` skips the process rounds (the paired windows alone take about six minutes);
/// `--goal-only` the two paired lines after the goal's; `--rounds-only` every paired line.
///
/// It judges nothing itself: each line with a goal is followed by `result <goal> <ratio>`, which
/// `hangwatch-bench --figures H1` (or `H2`: `--vapor`), run by `make bench`, reads and judges
/// against its goals (Sources/hangwatch-bench/Goals.swift: `H1-hummingbird-paired`,
/// `H1-hummingbird-paired-default`, `H2-vapor-paired`), failing the run when one is missed.
/// Exit status: 0 measured; 1 a measurement failed; 2 usage; 3 it could not run (wrk or the
/// service is missing).
@main
struct HummingbirdBench {
    static let wrk = "/usr/bin/wrk"

    static func main() throws {
        let arguments = CommandLine.arguments
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let index = arguments.firstIndex(of: name) else { return fallback }
            guard index + 1 < arguments.count, let value = Int(arguments[index + 1]), value > 0 else {
                FileHandle.standardError.write(Data("hangwatch-hummingbird-bench: \(name) needs a positive whole number\n".utf8))
                exit(2)
            }
            return value
        }
        let rounds = option("--rounds", 10)
        let seconds = option("--seconds", 3)
        func cannotRun(_ reason: String) -> Never {
            FileHandle.standardError.write(Data("hangwatch-hummingbird-bench: cannot run: \(reason)\n".utf8))
            exit(3)
        }
        guard FileManager.default.isExecutableFile(atPath: wrk) else { cannotRun("\(wrk) is missing: apt-get install wrk") }
        let here = ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "") as NSString
        let vapor = arguments.contains("--vapor")
        let service = here.deletingLastPathComponent + (vapor ? "/hangwatch-vapor-service" : "/hangwatch-hummingbird-service")
        guard FileManager.default.isExecutableFile(atPath: service) else {
            cannotRun(
                "no \(service): build it (swift build -c release --package-path Tools --scratch-path .build"
                    + (vapor ? " --enable-all-traits --product hangwatch-vapor-service)" : " --product hangwatch-hummingbird-service)"))
        }
        let scratch = FileManager.default.temporaryDirectory.path + "/hangwatch-hummingbird-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }

        let taskset = "/usr/bin/taskset"
        let pinned = ProcessInfo.processInfo.activeProcessorCount >= 2 && FileManager.default.isExecutableFile(atPath: taskset)
        say("    server on CPU 0, wrk on CPU 1: \(pinned ? "yes" : "no (one CPU, or no taskset)")")

        /// Starts the service (on CPU 0, where there are two: otherwise server and wrk fight for both,
        /// and the rounds' spread, seen 0.96 to 1.25, hides what is measured) with `arguments`;
        /// returns it once it has written its port to `portFile`, with the port.
        func startServer(portFile: String, _ arguments: [String]) throws -> (server: Process, port: Int) {
            try? FileManager.default.removeItem(atPath: portFile)
            let server = Process()
            server.executableURL = URL(fileURLWithPath: pinned ? taskset : service)
            server.arguments = (pinned ? ["-c", "0", service] : []) + ["--port", "0", "--port-file", portFile] + arguments
            server.standardOutput = FileHandle.nullDevice
            server.standardError = FileHandle.nullDevice
            try server.run()
            for _ in 0..<600 {
                let text = try? String(contentsOfFile: portFile, encoding: .utf8)
                if let port = text.flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) { return (server, port) }
                usleep(50_000)
            }
            stop(server)
            throw BenchError("the service did not start: \(service)")
        }

        func stop(_ server: Process) {
            kill(server.processIdentifier, SIGTERM)
            server.waitUntilExit()
        }

        /// `wrk` (on CPU 1, where there are two) against `/hello` for `seconds`.
        func wrkProcess(port: Int, seconds: Int) -> Process {
            let load = Process()
            load.executableURL = URL(fileURLWithPath: pinned ? taskset : wrk)
            load.arguments = (pinned ? ["-c", "1", wrk] : []) + ["-t1", "-c16", "-d\(seconds)s", "http://127.0.0.1:\(port)/hello"]
            return load
        }

        /// The server's CPU time so far (user + system, clock ticks), from `/proc/<pid>/stat`.
        func cpuTicks(_ pid: Int32) -> Double? {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
            return user + system
        }

        /// CPU time so far (seconds, from each thread's `schedstat`) of the monitor's own threads
        /// in `pid`: its watchdogs, pingers, event-loop watchers and pool watch (`hangwatch-wdog`, `hangwatch-ping`, `hangwatch-loop`,
        /// `hangwatch-pool`).
        func monitorSeconds(_ pid: Int32) -> Double {
            let names: Set<String> = ["hangwatch-wdog", "hangwatch-ping", "hangwatch-loop", "hangwatch-pool"]
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            return tasks.reduce(0) { total, tid in
                let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .newlines) ?? ""
                guard names.contains(name),
                    let schedstat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8),
                    let nanoseconds = schedstat.split(separator: " ").first.flatMap({ Double($0) })
                else { return total }
                return total + nanoseconds / 1e9
            }
        }

        /// Requests per second, the server's CPU time per request (microseconds), and the
        /// monitor threads' share of the server's CPU time.
        func run(watched: Bool) throws -> (rate: Double, cpuMicroseconds: Double, monitorShare: Double) {
            let (server, port) = try startServer(portFile: scratch + "/port", watched ? ["--reports", scratch + "/reports"] : [])
            defer { stop(server) }
            let warmUp = wrkProcess(port: port, seconds: 1)
            warmUp.standardOutput = FileHandle.nullDevice
            warmUp.standardError = FileHandle.nullDevice
            try warmUp.run()
            warmUp.waitUntilExit()
            // Measured once every loop's epoll instance is watched (until then a loop is pinged).
            var polls = 0
            while watched, polls < 100, try get("/watch", port: port) != "exact" {
                polls += 1
                usleep(50_000)
            }
            let load = wrkProcess(port: port, seconds: seconds)
            let output = Pipe()
            load.standardOutput = output
            load.standardError = output
            let cpuBefore = cpuTicks(server.processIdentifier)
            let monitorBefore = monitorSeconds(server.processIdentifier)
            try load.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            load.waitUntilExit()
            let line = text.split(separator: "\n").first { $0.hasPrefix("Requests/sec:") } ?? ""
            guard let value = Double(line.split(separator: " ").last ?? "") else { throw BenchError("wrk printed no rate: \(text)") }
            let cpuAfter = cpuTicks(server.processIdentifier)
            let monitor = monitorSeconds(server.processIdentifier) - monitorBefore
            let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
            var cpu = Double.nan
            if let cpuBefore, let cpuAfter { cpu = (cpuAfter - cpuBefore) / ticksPerSecond }
            return (value, cpu * 1e6 / (value * Double(seconds)), monitor / cpu)
        }

        /// Both measurements of round or pair `index`, the unwatched one first in even ones, so
        /// neither side always comes second.
        func inTurn<T>(_ index: Int, _ measure: (_ watched: Bool) throws -> T) rethrows -> (unwatched: T, watched: T) {
            if index % 2 == 0 {
                let unwatched = try measure(false)
                return (unwatched, try measure(true))
            }
            let watched = try measure(true)
            return (try measure(false), watched)
        }

        var bare: [Double] = [], watched: [Double] = [], ratios: [Double] = [], cpuRatios: [Double] = [], shares: [Double] = []
        let pairedOnly = arguments.contains("--paired-only") || vapor
        for round in 0..<(pairedOnly ? 0 : rounds) {
            let (a, b) = try inTurn(round) { try run(watched: $0) }
            bare.append(a.rate)
            watched.append(b.rate)
            ratios.append(b.rate / a.rate)
            cpuRatios.append(b.cpuMicroseconds / a.cpuMicroseconds)
            shares.append(b.monitorShare)
            say(String(format: "    round %d: unwatched %.0f, watched %.0f requests/s, ratio %.3f; server CPU per request %.1f / %.1f us; monitor threads %.2f %%",
                         round + 1, a.rate, b.rate, b.rate / a.rate, a.cpuMicroseconds, b.cpuMicroseconds, b.monitorShare * 100))
        }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        /// The lower and upper quartiles (the values a quarter in from each end).
        func quartiles(_ values: [Double]) -> (Double, Double) {
            let sorted = values.sorted()
            return (sorted[sorted.count / 4], sorted[sorted.count - 1 - sorted.count / 4])
        }
        /// A 95 % confidence interval of the median, whatever the distribution: the order
        /// statistics n/2 ∓ 1.96·√n/2 (for 96 values the 38th and 59th).
        func medianInterval(_ values: [Double]) -> (Double, Double) {
            let sorted = values.sorted()
            let n = Double(sorted.count), half = 1.96 * n.squareRoot() / 2
            let low = max(Int((n / 2 - half).rounded(.down)), 1), high = min(Int((n / 2 + 1 + half).rounded(.up)), sorted.count)
            return (sorted[low - 1], sorted[high - 1])
        }
        if !pairedOnly {
            say(String(format: "H1  Hummingbird 2 server under wrk, requests/s: unwatched / watched   %.0f / %.0f", median(bare), median(watched)))
            let ratio = median(ratios)
            let roundQuartiles = quartiles(ratios)
            // Separate processes: an A/A run read 0.986 and 1.010, so the goal is judged on the
            // paired line below (docs/performance.md, H1).
            say(String(format: "H1  Hummingbird 2 server, throughput: watched / unwatched              %.3f   quartiles %.3f-%.3f   (separate processes, about 1.5 %% noise: the goal's line is the paired one below)",
                         ratio, roundQuartiles.0, roundQuartiles.1))
            say(String(format: "H1  Hummingbird 2 server, CPU per request: watched / unwatched           %.3f", median(cpuRatios)))
            say(String(format: "H1  Hummingbird 2 server watched: the monitor threads' share of its CPU   %.2f %%", median(shares) * 100))
        }

        if arguments.contains("--rounds-only") { return }

        // Paired windows in one server: the same process and the same wrk run, the watch started
        // and stopped in turn (SIGUSR1 / SIGUSR2), so neither a server's start nor the machine's
        // drift over a minute lands on one side. As shipped (the group made with EventLoopTicks),
        // then the default set-up, the boundaries under load from a ping at each look (`--no-loop-ticks`),
        // then the loops alone (`--no-pool-watch`: what the pool watch costs is the difference).
        let pairs = option("--pairs", 48)
        if vapor {
            try paired(pairs: pairs, servers: 2, label: ", a Vapor 4 server in the default set-up (no EventLoopTicks)", goal: "H2-vapor-paired")
            return
        }
        try paired(pairs: pairs, servers: 2, label: "", goal: "H1-hummingbird-paired")
        if arguments.contains("--goal-only") { return }
        try paired(
            pairs: pairs, label: ", the default set-up (no EventLoopTicks: a ping at each look)", goal: "H1-hummingbird-paired-default",
            ["--no-loop-ticks"])
        try paired(pairs: pairs, label: ", the loops only (pool watch off)", goal: nil, ["--no-pool-watch"])

        /// `pairs` pairs from each of `servers` servers started in turn, their ratios pooled; for a
        /// line with a goal, its `result` line.
        func paired(pairs: Int, servers: Int = 1, label: String, goal: String?, _ extra: [String] = []) throws {
            var pairRatios: [Double] = []
            for index in 0..<servers {
                let ratios = try vapor ? loadInTurnRatios(pairs: pairs) : pairedRatios(pairs: pairs, extra)
                if servers > 1 {
                    say(String(format: "    server %d of %d: median %.3f of %d pairs", index + 1, servers, median(ratios), ratios.count))
                }
                pairRatios += ratios
            }
            let pairRatio = median(pairRatios)
            let pairQuartiles = quartiles(pairRatios)
            let interval = medianInterval(pairRatios)
            let verdict = goal.map { "   (goal \($0))" } ?? ""
            say(String(format: "%@  the same server watched and not in turn%@, %d pairs of 0.5 s%@: watched / unwatched   %.3f%@   quartiles %.3f-%.3f, median's 95%% interval %.3f-%.3f",
                         vapor ? "H2" : "H1", label, pairRatios.count, servers > 1 ? " from \(servers) servers" : "", pairRatio, verdict,
                         pairQuartiles.0, pairQuartiles.1, interval.0, interval.1))
            if let goal { say("result \(goal) " + String(format: "%.4f", pairRatio)) }
        }

        /// The Vapor server's pairs: its loops never wait under this load, so a watch started during
        /// it would stay in its fallback (a loop's epoll instance is learnt the first time the loop
        /// is seen waiting). As a service starts its watch before its traffic, the watch is toggled
        /// here with no load, and each window gets a `wrk` run of its own (connections made and
        /// warmed for the settle time), for both sides alike.
        func loadInTurnRatios(pairs: Int) throws -> [Double] {
            let (server, port) = try startServer(portFile: scratch + "/port-paired", ["--reports", scratch + "/reports-paired", "--toggle-watch"])
            defer { stop(server) }
            return try ratiosInTurn(pairs: pairs) { watched in
                _ = try toggle(server, port: port, watched: watched)
                let load = wrkProcess(port: port, seconds: 3)
                load.standardOutput = FileHandle.nullDevice
                load.standardError = FileHandle.nullDevice
                try load.run()
                defer {
                    load.terminate()
                    load.waitUntilExit()
                }
                return try servedRate(port: port, settle: 0.5, window: 0.5)
            }
        }

        /// The ratios of `pairs` pairs of windows in one server started with `extra`.
        func pairedRatios(pairs: Int, _ extra: [String]) throws -> [Double] {
            let (server, port) = try startServer(
                portFile: scratch + "/port-paired", ["--reports", scratch + "/reports-paired", "--toggle-watch"] + extra)
            defer { stop(server) }
            let settle = 0.25, window = 0.5
            // (Starting the watch takes up to a few thresholds under load: the budget allows a second.)
            let load = wrkProcess(port: port, seconds: Int((Double(pairs) * 2 * (settle + window + 0.5)).rounded(.up)) + 3)
            load.standardOutput = FileHandle.nullDevice
            load.standardError = FileHandle.nullDevice
            try load.run()
            defer { load.terminate() }
            usleep(1_000_000)  // warm-up
            var learning: [Double] = []
            let pairRatios = try ratiosInTurn(pairs: pairs) { watched in
                let took = try toggle(server, port: port, watched: watched)
                if watched { learning.append(took) }
                return try servedRate(port: port, settle: settle, window: window)
            }
            say(String(format: "    the watch was exact %.0f ms (median) after SIGUSR1", median(learning) * 1000))
            return pairRatios
        }

        /// Starts (SIGUSR1) or stops (SIGUSR2) the server's watch and waits until it is what a window
        /// measures: every loop's epoll instance watched (learnt at a moment the loop waits; until
        /// then a loop is pinged, which costs less), or the watch stopped. Returns how long that took.
        func toggle(_ server: Process, port: Int, watched: Bool) throws -> TimeInterval {
            kill(server.processIdentifier, watched ? SIGUSR1 : SIGUSR2)
            let toggled = Date()
            while try get("/watch", port: port) != (watched ? "exact" : "off") {
                guard Date().timeIntervalSince(toggled) < 10 else { throw BenchError("the watch did not become \(watched ? "exact" : "off") in 10 s") }
                usleep(10_000)
            }
            return Date().timeIntervalSince(toggled)
        }

        /// `/hello` requests served a second over `window` seconds, after `settle` seconds.
        func servedRate(port: Int, settle: Double, window: Double) throws -> Double {
            usleep(useconds_t(settle * 1e6))
            let (before, start) = (try served(port: port), Date())
            usleep(useconds_t(window * 1e6))
            let (after, end) = (try served(port: port), Date())
            return Double(after - before) / end.timeIntervalSince(start)
        }

        /// `pairs` ratios watched / unwatched of `rate`, each pair's sides in turn (`inTurn`), each printed.
        func ratiosInTurn(pairs: Int, _ rate: (_ watched: Bool) throws -> Double) rethrows -> [Double] {
            var pairRatios: [Double] = []
            for pair in 0..<pairs {
                let (off, on) = try inTurn(pair) { try rate($0) }
                pairRatios.append(on / off)
                say(String(format: "    pair %d: unwatched %.0f, watched %.0f requests/s, ratio %.3f", pair + 1, off, on, on / off))
            }
            return pairRatios
        }
    }

    /// The server's count of `/hello` requests answered (`GET /served`).
    static func served(port: Int) throws -> Int {
        let body = try get("/served", port: port)
        guard let value = Int(body) else { throw BenchError("GET /served answered: \(body)") }
        return value
    }

    /// The body of `GET path` (one connection), trimmed.
    static func get(_ path: String, port: Int) throws -> String {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw BenchError("socket: \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw BenchError("connect to port \(port): \(errno)") }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard write(socket, request, request.count) == request.count else { throw BenchError("write: \(errno)") }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(socket, &buffer, buffer.count)
            if count <= 0 { break }
            response += buffer[0..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 200"), let body = text.components(separatedBy: "\r\n\r\n").last
        else { throw BenchError("GET \(path) answered: \(text)") }
        return body.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A line of output, flushed at once: `hangwatch-bench` passes the lines on as they come.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
