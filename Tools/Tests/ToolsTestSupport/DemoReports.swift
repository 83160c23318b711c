import Foundation
import HangWatchReport
import HangWatchTestSupport

/// Real reports: the demo service runs under the monitor and hangs five ways (three computing, a
/// lock wait, a sleep). It runs once per build of the demo (and ten minutes): the reports and what it
/// printed are kept in the temporary directory under the binary's identity, so the test processes of one `make test`
/// share one run. Tests read the directory; a test that changes reports copies them first.
package enum DemoReports {
    /// The demo's run, made on first use: its report directory and what it printed.
    package static let run: Result<(directory: String, result: CommandResult), DemoFailure> = {
        let demo = BuiltExecutable.path("hangwatch-demo")
        var info = stat()
        guard FileManager.default.isExecutableFile(atPath: demo), stat(demo, &info) == 0 else {
            return .failure(DemoFailure(message: "build the demo first: swift build (\(demo))"))
        }
        let identity = "\(info.st_dev)-\(info.st_ino)-\(info.st_size)-\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        let path = FileManager.default.temporaryDirectory.path + "/hangwatch-test-demo-\(identity)"
        if let kept = kept(at: path) { return .success((path, kept)) }
        // A run kept from long ago (tests filter by age): ours to replace.
        try? FileManager.default.removeItem(atPath: path)
        // A fresh run in a directory of this process's own, moved into place whole.
        let fresh = path + ".run-\(getpid())"
        do {
            let result = try ExecutableRun.run(demo, ["--reports", fresh], environment: ["XDG_CACHE_HOME": fresh + "-cache"], timeout: 120)
            guard result.status == 0 else { return .failure(DemoFailure(message: "demo failed: \(result.output)\(result.errors)")) }
            try Data(result.output.utf8).write(to: URL(fileURLWithPath: fresh + "/.demo-output"))
            try Data(result.errors.utf8).write(to: URL(fileURLWithPath: fresh + "/.demo-errors"))
            // Another process may have finished first: then its run is the one kept.
            if rename(fresh, path) != 0, let kept = kept(at: path) { return .success((path, kept)) }
            return .success((path, result))
        } catch {
            return .failure(DemoFailure(message: "demo did not start: \(error)"))
        }
    }()

    /// A finished earlier run kept at `path` less than ten minutes ago: what it printed.
    private static func kept(at path: String) -> CommandResult? {
        guard let written = (try? FileManager.default.attributesOfItem(atPath: path + "/.demo-output"))?[.modificationDate] as? Date,
            Date().timeIntervalSince(written) < 600,
            let output = FileManager.default.contents(atPath: path + "/.demo-output"),
            let errors = FileManager.default.contents(atPath: path + "/.demo-errors")
        else { return nil }
        return CommandResult(status: 0, output: String(decoding: output, as: UTF8.self), errors: String(decoding: errors, as: UTF8.self))
    }

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
