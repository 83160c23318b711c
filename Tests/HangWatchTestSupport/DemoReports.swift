import Foundation
import HangWatchReport

/// Real reports: the demo service runs once per test process under the monitor and hangs five
/// ways (three computing, a lock wait, a sleep). Each test copies them into a directory of its own.
package enum DemoReports {
    /// The demo's run, made on first use: its report directory and what it printed.
    package static let run: Result<(directory: String, result: CommandResult), DemoFailure> = {
        let path = FileManager.default.temporaryDirectory.path + "/hangwatch-cli-demo-\(getpid())"
        let demo = BuiltExecutable.path("hangwatch-demo")
        guard FileManager.default.isExecutableFile(atPath: demo) else {
            return .failure(DemoFailure(message: "build the demo first: swift build (\(demo))"))
        }
        do {
            let result = try ExecutableRun.run(demo, ["--reports", path], environment: ["XDG_CACHE_HOME": path + "-cache"], timeout: 120)
            guard result.status == 0 else { return .failure(DemoFailure(message: "demo failed: \(result.output)\(result.errors)")) }
            return .success((path, result))
        } catch {
            return .failure(DemoFailure(message: "demo did not start: \(error)"))
        }
    }()

    /// The demo's report directory (read it; copy before changing anything in it).
    package static var directory: Result<String, DemoFailure> { run.map(\.directory) }

    package struct DemoFailure: Error, CustomStringConvertible {
        package var message: String
        package var description: String { message }
    }

    /// The demo's reports, parsed.
    package static func reports() throws -> [HangReport] {
        let directory = try directory.get()
        return try ReportStore(directory: directory).list().map { try ReportReader().read(path: $0.path) }
    }

    /// Copies the demo's reports into `service` of spool `root` the way a monitor writes them,
    /// `copies` times each (distinct ids).
    package static func copy(into root: String, service: String, copies: Int = 1) throws {
        let source = try directory.get()
        let store = ReportStore(directory: root + "/" + service, access: .sharedWithAgent)
        try store.prepare()
        for file in try ReportStore(directory: source).list() {
            let report = try ReportReader().read(path: file.path)
            for copy in 0..<copies {
                var duplicate = report
                if copy > 0 { duplicate.id += "-\(copy)" }
                try store.write(duplicate)
            }
        }
    }
}
