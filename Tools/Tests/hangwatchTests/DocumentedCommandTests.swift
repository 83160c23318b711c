import Foundation
import HangWatchTestSupport
import Testing

/// Every `$ hangwatch …` line in the README and docs runs as printed, from a directory where
/// `make demo` has left its reports (no --dir needed there).
@Suite struct DocumentedCommandTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized.path

    /// `(file, command)` for each prompt line of a hangwatch command.
    static func documentedCommands() throws -> [(file: String, command: String)] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: repository + "/docs").filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        return try (["README.md"] + docs.sorted()).flatMap { file in
            try String(contentsOfFile: repository + "/" + file, encoding: .utf8).split(separator: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { $0.hasPrefix("$ hangwatch ") }
                .map { (file, String($0.dropFirst(2))) }
        }
    }

    @Test func everyDocumentedCommandRunsAsPrinted() throws {
        let commands = try Self.documentedCommands()
        #expect(commands.count >= 3, "the README's examples were not found")
        let fixture = try Fixture()
        let here = fixture.root + "/here"
        try FileManager.default.createDirectory(atPath: here, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.directory, toPath: here + "/hangwatch-reports")
        for (file, command) in commands {
            // These examples use no quoting: words are split on spaces.
            let words = command.split(separator: " ").map(String.init)
            let result = try Hangwatch.run(Array(words.dropFirst()), cache: fixture.cache, workingDirectory: here)
            #expect(result.status == 0, "\(file): `\(command)` exited \(result.status): \(result.errors)")
            #expect(!result.output.isEmpty, "\(file): `\(command)` printed nothing")
        }
    }

    /// `make demo` ends by saying where the CLI it built is and how to type `hangwatch` as the
    /// README does; the alias it prints runs that CLI, and the README says the same path.
    @Test func makeDemoSaysHowToRunTheCLIItBuilt() throws {
        let result = try ExecutableRun.run("/usr/bin/make", ["-s", "-C", Self.repository, "demo-hint"], timeout: 120)
        #expect(result.status == 0, "\(result.errors)")
        let alias = try #require(result.lines.first { $0.contains("alias hangwatch=") }, "\(result.output)")
        let path = try #require(alias.split(separator: "\"").dropFirst().first.map(String.init), "\(alias)")
        #expect(path.hasSuffix("/hangwatch") && path.hasPrefix(Self.repository + "/.build/"), "\(path)")
        let help = try ExecutableRun.run(path, ["--help"], timeout: 30)
        #expect(help.status == 0 && help.output.contains("USAGE: hangwatch"), "\(help.output)\(help.errors)")
        let readme = try String(contentsOfFile: Self.repository + "/README.md", encoding: .utf8)
        #expect(readme.contains("alias hangwatch=$PWD/.build/debug/hangwatch"))
        #expect(FileManager.default.isExecutableFile(atPath: Self.repository + "/.build/debug/hangwatch"))
    }
}
