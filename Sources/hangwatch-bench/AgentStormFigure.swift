import Foundation
@_spi(Internal) import HangWatchReport

/// Figure 21: the host agent under a storm. The tools' release `hangwatchd` (`HANGWATCH_AGENT`,
/// which `make bench` sets) keeps a spool of four service directories into which a writer here
/// puts `rate` reports a second for `seconds` (copies of real reports of this binary, about 17 KiB,
/// written as the monitor writes them: atomically, with fsync), as the agent runs on a host: its
/// defaults (naming on, retention's 500 reports a service), its Prometheus endpoint scraped every
/// 5 s and its hangs exported as OTLP/HTTP log records to a receiver here (`OTLPReceiver`).
///
/// Measured: the agent's CPU time (`/proc/<pid>/stat`) over the writing and until it has counted and
/// exported every report, as a share of one CPU over the writing;
/// its peak resident memory (`VmHWM`); and, up to `catchUpLimit` after the last report, the hangs
/// it counted (`hangwatch_hangs_total` of the four services) and the report ids its log records
/// carried: every report written must be in both.
struct AgentStormFigure {
    var seconds: Double
    var rate = 100
    var services = ["billing", "cart", "search", "gateway"]
    /// How long after the last report the agent may take to count it and send its record (it
    /// falls behind at this rate: about 20 s on the 2-CPU VM; a report not counted by then is lost).
    var catchUpLimit = 120.0

    struct Outcome {
        var written: Int
        var rate: Int
        var services: Int
        var reportKiB: Int
        /// The writing's length, and the agent's CPU time over it.
        var seconds: Double
        var cpuSeconds: Double
        /// What the reports cost the agent (its CPU until it had counted and exported them all) as
        /// a share of one CPU over the writing: the same whether it kept up or caught up after
        /// (it falls behind on this machine, and how far moves from run to run).
        var cpuPercent: Double { (cpuSeconds + catchUpCPUSeconds) / seconds * 100 }
        var peakMiB: Double
        /// Reports written that the agent counted, and whose log record the receiver got.
        var counted: Int
        var records: Int
        /// Of those records, the ones the agent sent with named frames (it names a report a
        /// moment after reading it; retention may delete it first at this rate).
        var namedRecords: Int
        var catchUpSeconds: Double
        var catchUpCPUSeconds: Double
        var droppedByRetention: Int
        var droppedByExport: Int
    }

    func measure() throws -> Outcome {
        let agent = try ToolBinary.path(
            "hangwatchd", variable: "HANGWATCH_AGENT",
            build: "swift build -c release --package-path Tools --scratch-path .build --product hangwatchd")
        let originals = try RealReports.make(name: "agent")
        let root = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-agent-\(getpid())"
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: root + "/spool", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let stores = services.map { ReportStore(directory: root + "/spool/" + $0) }
        for store in stores { try store.prepare() }

        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        let logPath = root + "/agent.log", configPath = root + "/agent.env"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        _ = FileManager.default.createFile(atPath: configPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: agent)
        process.arguments = [
            "--report-root", root + "/spool", "--config", configPath, "--set", "HANGWATCHD_METRICS_LISTEN=127.0.0.1:0",
            "--set", "HANGWATCHD_OTLP_ENDPOINT=http://127.0.0.1:\(receiver.port)",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = nil
        environment["WATCHDOG_USEC"] = nil
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()
        let pid = process.processIdentifier
        defer {
            if process.isRunning {
                kill(pid, SIGTERM)
                let deadline = Date().addingTimeInterval(15)
                while process.isRunning && Date() < deadline { usleep(50_000) }
                if process.isRunning { kill(pid, SIGKILL) }
            }
            process.waitUntilExit()
        }
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        // Its metrics port (it logs the address it bound), then its first answer.
        var port: Int?
        let started = Date()
        while port == nil {
            guard process.isRunning, Date().timeIntervalSince(started) < 30 else {
                throw BenchFailure("hangwatchd did not start: \(log().split(separator: "\n").suffix(3).joined(separator: " | "))")
            }
            if let range = log().range(of: #"127\.0\.0\.1:[0-9]+/metrics"#, options: .regularExpression) {
                port = Int(log()[range].dropFirst("127.0.0.1:".count).prefix { $0.isNumber })
            }
            usleep(50_000)
        }
        let metricsPort = port!
        while (try? Self.get("/metrics", port: metricsPort)) == nil {
            guard process.isRunning, Date().timeIntervalSince(started) < 30 else { throw BenchFailure("hangwatchd's metrics never answered") }
            usleep(100_000)
        }
        sleep(1)

        // The writer, on a thread of its own, on a schedule: report i at i / rate seconds.
        let count = Int(seconds * Double(rate))
        final class Writer: @unchecked Sendable {
            var written = 0
            var bytes = 0
            var ids: Set<String> = []
            var failure: (any Error)?
        }
        let writer = Writer()
        let done = DispatchSemaphore(value: 0)
        let cpuBefore = Self.cpuSeconds(pid)
        let writeStart = Statistics.monotonicSeconds()
        let thread = Thread { [services, rate] in
            defer { done.signal() }
            for index in 0..<count {
                let due = writeStart + Double(index) / Double(rate)
                let wait = due - Statistics.monotonicSeconds()
                if wait > 0 { usleep(useconds_t(wait * 1e6)) }
                let service = index % services.count
                let report = RealReports.copy(originals[index % originals.count], service: services[service], at: Date(), index: index)
                do {
                    let path = try stores[service].write(report)
                    writer.bytes += Int((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
                    writer.written += 1
                    writer.ids.insert(report.id)
                } catch {
                    writer.failure = error
                    return
                }
            }
        }
        thread.start()
        // Scraped every 5 s, as Prometheus would.
        while done.wait(timeout: .now() + 5) == .timedOut { _ = try? Self.get("/metrics", port: metricsPort) }
        let writeEnd = Statistics.monotonicSeconds()
        let cpuAfterWriting = Self.cpuSeconds(pid)
        if let failure = writer.failure { throw BenchFailure("writing report \(writer.written): \(failure)") }
        let ids = writer.ids

        // Until everything is counted and exported, or the limit.
        var metrics = ""
        var counted = 0, received = 0, named = 0
        func look() {
            metrics = (try? Self.get("/metrics", port: metricsPort)) ?? metrics
            counted = Self.hangsCounted(metrics, services: services)
            let counts = receiver.counts
            received = counts.reportIDs.intersection(ids).count
            named = counts.named.intersection(ids).count
        }
        look()
        while (counted < count || received < count) && Statistics.monotonicSeconds() - writeEnd < catchUpLimit && process.isRunning {
            usleep(250_000)
            look()
        }
        let caughtUp = Statistics.monotonicSeconds() - writeEnd
        let cpuAtEnd = Self.cpuSeconds(pid)
        let peak = Self.peakResidentMiB(pid)
        guard process.isRunning else { throw BenchFailure("hangwatchd exited \(process.terminationStatus): \(log().suffix(400))") }
        let undecodable = receiver.counts.undecodable
        guard undecodable == 0 else { throw BenchFailure("\(undecodable) OTLP requests did not decode as ExportLogsServiceRequest") }
        return Outcome(
            written: writer.written, rate: rate, services: services.count, reportKiB: writer.bytes / max(1, writer.written) / 1024,
            seconds: writeEnd - writeStart, cpuSeconds: cpuAfterWriting - cpuBefore, peakMiB: peak, counted: counted, records: received, namedRecords: named,
            catchUpSeconds: caughtUp, catchUpCPUSeconds: cpuAtEnd - cpuAfterWriting,
            droppedByRetention: Self.sample(metrics, #"hangwatch_reports_dropped_total{reason="retention"}"#),
            droppedByExport: Self.sample(metrics, #"hangwatch_reports_dropped_total{reason="export"}"#))
    }

    /// The sum of `hangwatch_hangs_total` over the series of `services` (the agent's own
    /// directory's hangs, if it has any under the storm, are not the writer's).
    static func hangsCounted(_ metrics: String, services: [String]) -> Int {
        metrics.split(separator: "\n").reduce(0) { total, line in
            guard line.hasPrefix("hangwatch_hangs_total{"), services.contains(where: { line.contains("service=\"\($0)\"") }),
                let value = line.split(separator: " ").last.flatMap({ Double($0) })
            else { return total }
            return total + Int(value)
        }
    }

    /// The value of the one series named exactly `series` (0 if it is not there).
    static func sample(_ metrics: String, _ series: String) -> Int {
        metrics.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { $0.split(separator: " ").last }
            .flatMap { Double($0) }.map { Int($0) } ?? 0
    }

    /// User + system CPU time of process `pid` (`/proc/<pid>/stat`, clock ticks).
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return .nan }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Peak resident memory of process `pid` (`VmHWM`), MiB.
    static func peakResidentMiB(_ pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kibibytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return .nan }
        return kibibytes / 1024
    }

    /// The body of `GET path` on 127.0.0.1 (one connection), or an error.
    static func get(_ path: String, port: Int) throws -> String {
        let socket = try SystemCall.check("socket") { Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        try SystemCall.check("connect to port \(port)") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard try SystemCall.check("write", { write(socket, request, request.count) }) == request.count else {
            throw BenchFailure("write: a short write to port \(port)")
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(socket, &buffer, buffer.count)
            if count <= 0 { break }
            response += buffer[0..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 200"), let split = text.range(of: "\r\n\r\n") else { throw BenchFailure("GET \(path) answered: \(text.prefix(200))") }
        return String(text[split.upperBound...])
    }
}
