import Foundation
import HangWatchTestSupport
import Testing

/// glibc's getxattr(2) wrapper (sys/xattr.h is not in the Glibc module).
@_silgen_name("getxattr")
func getxattr(_ path: UnsafePointer<CChar>, _ name: UnsafePointer<CChar>, _ value: UnsafeMutableRawPointer?, _ size: Int) -> Int

/// The files under systemd/, checked with systemd's own tools (this machine has no systemd as
/// PID 1; these tools need none).
@Suite(.serialized) struct UnitFileTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized.path
    static let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    /// The unit with ExecStart pointing at the binary just built (verify checks that it exists).
    static func unitCopy() throws -> String {
        let text = try String(contentsOfFile: repository + "/systemd/hangwatchd.service", encoding: .utf8)
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatchd-unit-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/hangwatchd.service"
        try text.replacingOccurrences(of: "/usr/local/bin/hangwatchd", with: BuiltExecutable.path("hangwatchd"))
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test(.enabled(if: analyze != nil, "systemd-analyze is not installed"))
    func theUnitVerifies() throws {
        let result = try Self.run(Self.analyze!, ["verify", try Self.unitCopy()])
        #expect(result.status == 0, "\(result.output)")
        #expect(!result.output.contains("hangwatchd.service:"), "\(result.output)")
    }

    @Test(.enabled(if: analyze != nil, "systemd-analyze is not installed"))
    func theExposureScoreIsAtMostTwo() throws {
        let result = try Self.run(Self.analyze!, ["security", "--offline=true", try Self.unitCopy()])
        let line = try #require(result.output.split(separator: "\n").first { $0.contains("Overall exposure level") }, "\(result.output)")
        let score = try #require(line.split(separator: " ").compactMap { Double($0) }.first, "\(line)")
        #expect(score <= 2.0, "\(line)")
    }

    /// A host without the spool still starts both units (the agent then says what is missing), and
    /// the agent's mounts stay its own.
    @Test(.enabled(if: analyze != nil, "systemd-analyze is not installed"))
    func pathsAHostMayLackAreOptionalAndMountsArePrivate() throws {
        for file in ["hangwatchd.service", "hangwatch-monitored-service.conf"] {
            let text = try String(contentsOfFile: Self.repository + "/systemd/" + file, encoding: .utf8)
            let paths = text.split(separator: "\n").filter { $0.hasPrefix("ReadWritePaths=") }
            #expect(!paths.isEmpty, "\(file)")
            for line in paths {
                #expect(line.dropFirst("ReadWritePaths=".count).split(separator: " ").allSatisfy { $0.hasPrefix("-") }, "\(file): \(line)")
            }
        }
        let result = try Self.run(Self.analyze!, ["security", "--offline=true", try Self.unitCopy()])
        #expect(result.output.split(separator: "\n").contains { $0.hasPrefix("✓ PrivateMounts=") }, "\(result.output)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-sysusers"), "systemd-sysusers is not installed"))
    func theUserAndTheSpoolAreCreatedAsDescribed() throws {
        let root = FileManager.default.temporaryDirectory.path + "/hangwatchd-root-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        let users = try Self.run("/usr/bin/systemd-sysusers", ["--root=" + root, Self.repository + "/systemd/hangwatch.sysusers"])
        #expect(users.status == 0, "\(users.output)")
        let passwd = try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8)
        let user = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("hangwatch:") })
        let uid = try #require(Int(user.split(separator: ":")[2]))
        // The ACL names the agent's user, which the host resolves: check it with a user that exists here.
        let tmpfiles = try String(contentsOfFile: Self.repository + "/systemd/hangwatch.tmpfiles", encoding: .utf8)
        let local = root + "/hangwatch.conf"
        try tmpfiles.replacingOccurrences(of: "d:u:hangwatch:", with: "d:u:nobody:").write(toFile: local, atomically: true, encoding: .utf8)
        let created = try Self.run("/usr/bin/systemd-tmpfiles", ["--root=" + root, "--create", local])
        #expect(created.status == 0, "\(created.output)")
        var info = stat()
        #expect(lstat(root + "/var/lib/hangwatch/reports", &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o1770)
        #expect(Int(info.st_uid) == uid)
        var acl = [UInt8](repeating: 0, count: 256)
        #expect(getxattr(root + "/var/lib/hangwatch/reports", "system.posix_acl_default", &acl, acl.count) > 0)
    }
}
