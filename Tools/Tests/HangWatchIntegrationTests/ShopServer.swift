import Foundation
import HangWatchReport
import HangWatchSymbolication
import Testing

/// `hangwatch-hummingbird-service` (built next to the tests) run watched, on a free port of
/// loopback, with its log and its handlers' measurements in a scratch directory of its own.
/// (Sendable: nothing of it changes after `init`; `get` may be called from any thread.)
final class ShopServer: @unchecked Sendable {
    let scratch: String
    let process = Process()
    let port: Int

    var reports: String { scratch + "/reports" }
    var base: String { "http://127.0.0.1:\(port)" }
    var log: String { (try? String(contentsOfFile: scratch + "/log", encoding: .utf8)) ?? "" }

    /// The debug build beside the tests; with `HANGWATCH_HUMMINGBIRD_BUILD=release` (`make
    /// test-release-hummingbird`, in `make stress`), the release build of the same scratch path.
    static var binary: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        let debug = (executable as NSString).deletingLastPathComponent
        if ProcessInfo.processInfo.environment["HANGWATCH_HUMMINGBIRD_BUILD"] == "release" {
            return ((debug as NSString).deletingLastPathComponent as NSString).appendingPathComponent("release/hangwatch-hummingbird-service")
        }
        return debug + "/hangwatch-hummingbird-service"
    }

    /// Starts it (threshold `thresholdMs`, the monitor's debug log on, and `arguments` more) and
    /// waits for its port.
    init(thresholdMs: Int = 250, arguments: [String] = []) throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.binary), "\(Self.binary) is not built (swift build --build-tests)")
        scratch = FileManager.default.temporaryDirectory.path + "/hangwatch-hummingbird-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = [
            "--reports", scratch + "/reports", "--threshold-ms", "\(thresholdMs)", "--port", "0", "--port-file", scratch + "/port",
            "--measurements", scratch + "/measurements.jsonl",
        ] + arguments
        // The monitor's debug log: each pool job seen for half a threshold or more that got no
        // report says why (a test prints it: a missed request is explained in the output).
        process.environment = ProcessInfo.processInfo.environment.merging(["SHOP_HANGWATCH_LOG_LEVEL": "debug"]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        try #require(FileManager.default.createFile(atPath: scratch + "/log", contents: nil), "cannot create \(scratch)/log")
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + "/log"))
        try process.run()
        var port: Int?
        let deadline = Date().addingTimeInterval(60)
        while port == nil, Date() < deadline, process.isRunning {
            port = (try? String(contentsOfFile: scratch + "/port", encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if port == nil { usleep(50_000) }
        }
        guard let port else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw ShopServerError("the service did not start: \((try? String(contentsOfFile: scratch + "/log", encoding: .utf8)) ?? "")")
        }
        self.port = port
    }

    /// Every report it wrote, read and symbolicated.
    func symbolicatedReports() throws -> [HangReport] {
        let symbolicator = Symbolicator()
        return try ReportStore(directory: reports).list().map { stored -> HangReport in
            var report = try ReportReader().read(path: stored.path)
            symbolicator.symbolicate(&report)
            return report
        }
    }

    /// Stops it as systemd would (SIGTERM); its exit status.
    func stop() -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// One `GET path` on a connection of its own (HTTP/1.1, `Connection: close`): the body.
    func get(_ path: String) throws -> String {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw ShopServerError("socket: \(String(cString: strerror(errno)))") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ShopServerError("connect: \(String(cString: strerror(errno)))") }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ write(socket, $0.baseAddress, $0.count) }) == request.count else {
            throw ShopServerError("write: \(String(cString: strerror(errno)))")
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            response += buffer[..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 200") else { throw ShopServerError("GET \(path): \(text.prefix(200))") }
        return text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
    }
}

struct ShopServerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
