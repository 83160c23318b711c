import Foundation
import HangWatchReport
import Testing

/// A real Hummingbird 2 server under `wrk` whose `/report` handler asks an upstream service over
/// TCP synchronously, on its pool thread: a slow upstream (another process, a small Python
/// server that answers after 400 ms) holds every request's thread past the threshold. Each
/// request's `pool-job` report must say what the thread waited for: the upstream's address
/// (`127.0.0.1:port`) and the process at the other end, by pid and name (issue 45).
@Suite(.serialized) struct HummingbirdUpstreamTests {
    static let wrk = "/usr/bin/wrk"
    static let requests = 10

    /// A TCP server on 127.0.0.1 that answers each connection's line after `delay` seconds, each on
    /// a thread of its own; it prints its port.
    static let upstreamScript = """
        import socketserver, sys, time
        class Slow(socketserver.StreamRequestHandler):
            def handle(self):
                self.rfile.readline()
                time.sleep(float(sys.argv[1]))
                self.wfile.write(b"figures 42\\n")
        socketserver.ThreadingTCPServer.allow_reuse_address = True
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Slow)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    @Test func eachRequestWaitingForASlowUpstreamNamesItsAddressAndProcess() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.wrk), "\(Self.wrk) is missing: apt-get install wrk")
        let upstream = Process()
        upstream.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        upstream.arguments = ["-c", Self.upstreamScript, "0.4"]
        let output = Pipe()
        upstream.standardOutput = output
        upstream.standardError = FileHandle.nullDevice
        try upstream.run()
        defer { if upstream.isRunning { kill(upstream.processIdentifier, SIGKILL) } }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        let port = try #require(Int(line.trimmingCharacters(in: .whitespacesAndNewlines)), "the upstream said \(line)")

        // Every request its own report (no fold of repeats): each must name the upstream.
        let server = try ShopServer(arguments: ["--upstream-port", "\(port)", "--every-hang-reported"])
        // Load all along: /hello on both loops and the pool.
        let load = Process()
        load.executableURL = URL(fileURLWithPath: Self.wrk)
        load.arguments = ["-t1", "-c4", "-d\(2 + Self.requests)s", server.base + "/hello"]
        load.standardOutput = FileHandle.nullDevice
        load.standardError = FileHandle.nullDevice
        try load.run()
        usleep(1_000_000)
        for _ in 0..<Self.requests {
            #expect(try server.get("/report") == "report figures 42\n")
        }
        load.terminate()
        load.waitUntilExit()
        #expect(server.stop() == 0, "\(server.log)")

        let reports = try server.symbolicatedReports().filter { $0.source == "pool-job" && $0.heaviestStack?.frames.contains { $0.symbol?.contains("askUpstream") == true } == true }
        #expect(reports.count == Self.requests, "\(reports.count) reports of \(Self.requests) requests\n\(server.log)")
        for report in reports {
            let waits = try #require(report.waitsFor, "\(report.id) says nothing of its wait")
            let endpoint = try #require(waits.endpoints?.first, "\(waits)")
            #expect(waits.kind == "socket" && waits.syscall == "read" && waits.owner == "held", "\(waits)")
            #expect(endpoint.type == "tcp" && endpoint.remote == "127.0.0.1:\(port)" && endpoint.state == "ESTABLISHED", "\(endpoint)")
            #expect(waits.holder?.pid == upstream.processIdentifier && waits.holder?.name == "python3", "\(waits)")
        }
        if let first = reports.first?.waitsFor {
            print("[hummingbird] /report waited for \(first.endpoints?.first?.remote ?? "-") held by process \(first.holder?.pid ?? 0) \"\(first.holder?.name ?? "")\"")
        }
    }
}
