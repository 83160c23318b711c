import Foundation
import HangWatchTestSupport
import Testing

@testable import HangWatchAgent

/// `hangwatchd --check-config` prints the settings in effect, in the configuration file's own
/// notation: what it prints can be pasted back into the file.
@Suite struct CheckConfigTests {
    static func checkConfig(_ arguments: [String]) throws -> (status: Int32, output: String) {
        // An empty configuration file: the defaults, then the arguments.
        let empty = FileManager.default.temporaryDirectory.path + "/hangwatchd-check-\(getpid())-\(UUID().uuidString.prefix(6)).empty.env"
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        defer { unlink(empty) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("hangwatchd"))
        process.arguments = ["--check-config", "--config", empty] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test func sizesArePrintedAsTheyAreWrittenNotInBytes() throws {
        // The defaults, as config/hangwatchd.env writes them.
        let defaults = try Self.checkConfig([])
        #expect(defaults.status == 0)
        let lines = defaults.output.split(separator: "\n")
        #expect(lines.contains("HANGWATCHD_MAX_USE=512MiB"), "\(defaults.output)")
        #expect(lines.contains("HANGWATCHD_KEEP_FREE=1GiB"), "\(defaults.output)")
        let set = try Self.checkConfig(["--set", "HANGWATCHD_MAX_USE=64MiB", "--set", "HANGWATCHD_KEEP_FREE=0"])
        #expect(set.output.split(separator: "\n").contains("HANGWATCHD_MAX_USE=64MiB"), "\(set.output)")
        #expect(set.output.split(separator: "\n").contains("HANGWATCHD_KEEP_FREE=0"), "\(set.output)")
    }

    @Test func whatItPrintsReadsBackAsTheSameSettings() throws {
        let overrides = [
            "HANGWATCHD_MAX_USE=10MB", "HANGWATCHD_KEEP_FREE=1536KiB", "HANGWATCHD_MAX_AGE=7d", "HANGWATCHD_DEBUG_DIRS=/a:/b",
            "HANGWATCHD_METRICS_LISTEN=off", "HANGWATCHD_ENRICH=no",
        ]
        let printed = try Self.checkConfig(overrides.flatMap { ["--set", $0] })
        #expect(printed.status == 0)
        let file = FileManager.default.temporaryDirectory.path + "/hangwatchd-check-\(getpid())-\(UUID().uuidString.prefix(6)).env"
        try printed.output.write(toFile: file, atomically: true, encoding: .utf8)
        defer { unlink(file) }
        let reread = try AgentConfiguration.load(file: file, overrides: [])
        let original = try AgentConfiguration.load(file: nil, overrides: overrides, defaultFile: "/nonexistent/hangwatchd.env")
        #expect(reread == original)
        #expect(printed.output.split(separator: "\n").contains("HANGWATCHD_MAX_USE=10MB"), "\(printed.output)")
        #expect(printed.output.split(separator: "\n").contains("HANGWATCHD_KEEP_FREE=1536KiB"), "\(printed.output)")
    }
}
