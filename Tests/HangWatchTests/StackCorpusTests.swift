import Foundation
import Testing

/// The differential test of stack capture (Sources/hangwatch-stackcorpus): a program blocks its
/// main thread in each kind of system call under a known call chain, and each blocked-thread stack
/// (taken without a signal, as the watchdog takes it) is compared with the thread's own stack taken
/// in the same state by the signal handler; CPU-bound cases (a hot loop that reads the clock, so
/// samples land in the vDSO) must reach the outermost frame with the chain in order. Every frame
/// must match, or the stack must be a marked-truncated prefix.
///
/// Run against the debug build (built with the tests) and the release build (`make test` builds
/// it; built here when missing).
@Suite(.serialized) struct StackCorpusTests {
    struct Result: Decodable {
        struct Case: Decodable {
            var name: String
            var exact: Int
            var truncated: Int
            var wrong: Int
            var discarded: Int
            var inVDSO: Int
            var error: String?
        }
        var build: String
        var cases: [Case]
    }

    static let samples = 20

    func run(_ executable: String, _ arguments: [String] = []) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--samples", "\(Self.samples)", "--json"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try JSONDecoder().decode(Result.self, from: data)
    }

    /// The release build of the corpus: `make test` builds it next to the debug one; when it is
    /// missing (`swift test` alone), it is built here in a scratch path of its own (SwiftPM holds
    /// the main one while the tests run).
    static func releaseCorpus() throws -> String {
        let debug = URL(fileURLWithPath: BuiltExecutable.path("hangwatch-stackcorpus"))
        let triple = debug.deletingLastPathComponent().deletingLastPathComponent()  // .build/<triple>
        let release = triple.appendingPathComponent("release/hangwatch-stackcorpus").path
        if FileManager.default.isExecutableFile(atPath: release) { return release }
        let root = triple.deletingLastPathComponent().deletingLastPathComponent()
        let scratch = root.appendingPathComponent(".build-release-corpus")
        let build = Process()
        build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        build.arguments = [
            "swift", "build", "-c", "release", "--product", "hangwatch-stackcorpus", "--package-path", root.path,
            "--scratch-path", scratch.path,
        ]
        try build.run()
        build.waitUntilExit()
        let built = scratch.appendingPathComponent("release/hangwatch-stackcorpus").path
        try #require(FileManager.default.isExecutableFile(atPath: built), "the release corpus could not be built")
        return built
    }

    func check(_ result: Result, allowTruncation: Bool) {
        #expect(result.cases.count >= 20, "\(result.cases.map(\.name))")
        for item in result.cases {
            #expect(item.error == nil, "\(result.build) \(item.name): \(item.error ?? "")")
            #expect(item.wrong == 0, "\(result.build) \(item.name): \(item.wrong) of \(Self.samples) stacks wrong")
            #expect(item.exact + item.truncated + item.wrong == Self.samples, "\(result.build) \(item.name): \(item)")
            if !allowTruncation {
                #expect(item.truncated * 20 <= Self.samples, "\(result.build) \(item.name): \(item.truncated) of \(Self.samples) truncated")
            }
        }
        // The clock-reading case tests the vDSO only if samples landed there.
        let clock = result.cases.first { $0.name == "cpu-reading-the-clock" }
        #expect((clock?.inVDSO ?? 0) > 0, "no sample landed in the vDSO")
    }

    @Test func everyBlockedStackOfTheDebugBuildIsExactOrAMarkedPrefix() throws {
        let result = try run(BuiltExecutable.path("hangwatch-stackcorpus"))
        #expect(result.build == "debug")
        check(result, allowTruncation: false)
    }

    @Test func everyBlockedStackOfTheReleaseBuildIsExactOrAMarkedPrefix() throws {
        let result = try run(try Self.releaseCorpus())
        #expect(result.build == "release")
        check(result, allowTruncation: false)
    }

    /// Without the prologue method, every stack rests on the frame-record search alone: it may stop
    /// more often (an indirect call proves nothing), but it never invents a frame.
    @Test func theFrameRecordSearchAloneNeverInventsAFrame() throws {
        for executable in [BuiltExecutable.path("hangwatch-stackcorpus"), try Self.releaseCorpus()] {
            check(try run(executable, ["--no-prologue"]), allowTruncation: true)
        }
    }
}
