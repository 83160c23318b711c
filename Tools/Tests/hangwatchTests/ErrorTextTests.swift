import Foundation
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// Errors say, in plain words, which path, what went wrong and what to do: never Foundation's
/// sentences (`couldn’t be saved in the folder`), an NSError domain, or a system call's name.
@Suite(.serialized) struct ErrorTextTests {
    /// Root reads anything: the permission tests run the CLI as `nobody` then (CI runs as root).
    static var canDropPrivileges: Bool { geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") }

    /// `hangwatch arguments…` as a user the file modes apply to.
    static func unprivileged(_ arguments: [String], fixture: Fixture) throws -> CommandResult {
        guard geteuid() == 0 else { return try Hangwatch.run(arguments, cache: fixture.cache) }
        return try Hangwatch.run(
            ["-u", "nobody", "--", Hangwatch.binary] + arguments, cache: fixture.cache, executable: "/usr/sbin/runuser")
    }

    static func expectPlain(_ result: CommandResult, _ comment: Comment? = nil) {
        for raw in ["couldn’t", "couldn't", "Error Domain", "NSCocoaErrorDomain", "opendir(", "open(", "Swift.", "Error: "] {
            #expect(!result.errors.contains(raw), "\(raw) in: \(result.errors)")
        }
        #expect(result.errorLines.allSatisfy { $0.hasPrefix("hangwatch: ") }, "\(result.errors)")
    }

    @Test func writingIntoAMissingDirectoryNamesThePathAndTheFix() throws {
        let fixture = try Fixture()
        let target = fixture.root + "/missing/hang.svg"
        for arguments in [["flamegraph", "latest", "-o", target], ["export", "latest", "--format", "folded", "-o", target]] {
            let result = try fixture.hangwatch(arguments)
            #expect(result.status == 3, "\(arguments): \(result.errors)")
            #expect(
                result.errors == "hangwatch: cannot write \(target): no such file or directory (create the directory first, or give another -o)\n",
                "\(arguments): \(result.errors)")
            Self.expectPlain(result)
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.root + "/missing"))
    }

    @Test(.enabled(if: canDropPrivileges, "needs runuser when run as root"))
    func anUnreadableDirectoryNamesThePathAndTheFix() throws {
        let fixture = try Fixture()
        let locked = fixture.root + "/locked"
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
        #expect(chmod(locked, 0o700) == 0)
        #expect(chmod(fixture.root, 0o755) == 0)
        for command in [["list"], ["top"], ["watch", "--timeout", "5"]] {
            let result = try Self.unprivileged(command + ["--dir", locked], fixture: fixture)
            #expect(result.status == 3, "\(command): \(result.errors)")
            #expect(
                result.errors == "hangwatch: cannot read \(locked): permission denied (run as a user who can read it, or pass --dir)\n",
                "\(command): \(result.errors)")
            Self.expectPlain(result)
        }
        let validate = try Self.unprivileged(["validate", locked], fixture: fixture)
        #expect(validate.status == 3, "\(validate.output)")
        #expect(validate.output.contains("cannot read \(locked): permission denied"), "\(validate.output)")
        #expect(validate.lines.last == "0 valid, 1 invalid", "\(validate.output)")
    }

    @Test(.enabled(if: canDropPrivileges, "needs runuser when run as root"))
    func anUnreadableReportNamesThePathAndTheFix() throws {
        let fixture = try Fixture()
        let report = try #require(fixture.reportPaths.first)
        #expect(chmod(report, 0o600) == 0)
        #expect(chmod(fixture.root, 0o755) == 0)
        #expect(chmod(fixture.directory, 0o755) == 0)
        let result = try Self.unprivileged(["show", report, "--no-symbolicate"], fixture: fixture)
        #expect(result.status == 3, "\(result.errors)")
        #expect(result.errors == "hangwatch: cannot read \(report): permission denied (run as a user who can read it)\n", "\(result.errors)")
        Self.expectPlain(result)
    }

    /// A directory the user may list, holding reports they may not read (the agent's spool for
    /// someone outside its group): a permission error that says what to do, exit 3, never "no
    /// hangs match" (exit 1) or "no reports".
    @Test(.enabled(if: canDropPrivileges, "needs runuser when run as root"))
    func reportsTheUserMayNotReadAreAPermissionErrorNotAnEmptyAnswer() throws {
        let fixture = try Fixture()
        for report in fixture.reportPaths { #expect(chmod(report, 0o600) == 0) }
        #expect(chmod(fixture.root, 0o755) == 0)
        #expect(chmod(fixture.directory, 0o755) == 0)
        for command in [["list"], ["top"], ["show", "latest"], ["export", "--all", "--format", "folded"]] {
            let result = try Self.unprivileged(command + ["--dir", fixture.directory, "--no-symbolicate"], fixture: fixture)
            #expect(result.status == 3, "\(command): \(result.status) \(result.errors)")
            #expect(
                result.errorLines.last?.hasPrefix(
                    "hangwatch: permission denied: cannot read \(fixture.reportPaths.count) reports in \(fixture.directory) (owned by root:root, mode 600)")
                    == true, "\(command): \(result.errors)")
            #expect(result.errors.contains("or with sudo"), "\(command): \(result.errors)")
            #expect(!result.errors.contains("no hangs match") && !result.errors.contains("no reports in"), "\(command): \(result.errors)")
        }
    }

    @Test func aFileGivenAsTheDirectoryIsSaidToBeOne() throws {
        let fixture = try Fixture()
        let report = try #require(fixture.reportPaths.first)
        let result = try Hangwatch.run(["list", "--dir", report], cache: fixture.cache)
        #expect(result.status == 3)
        #expect(result.errors.contains("\(report) is a file, not a directory"), "\(result.errors)")
        Self.expectPlain(result)
    }

    @Test func watchingAMissingDirectoryFailsAtOnceNamingIt() throws {
        let fixture = try Fixture(withDemoReports: false)
        let missing = fixture.root + "/nowhere"
        let result = try Hangwatch.run(["watch", "--timeout", "5", "--dir", missing], cache: fixture.cache, timeout: 4)
        #expect(!result.timedOut)
        #expect(result.status == 3, "\(result.output)")
        #expect(result.errors == "hangwatch: report directory \(missing) does not exist (--dir: give the directory that holds the reports)\n", "\(result.errors)")
    }

    /// A --dir that is not there is named, said not to exist, and said to come from --dir, by
    /// every command that reads one; a path through a file says the system's reason.
    @Test func aMissingDirectoryIsSaidNotToExistByEveryCommand() throws {
        let fixture = try Fixture(withDemoReports: false)
        let missing = fixture.root + "/nope"
        for command in [
            ["list"], ["top"], ["show", "latest"], ["diff", "1.0", "2.0"], ["export", "--all"], ["flamegraph", "--all"], ["symbolicate", "latest"],
            ["watch", "--timeout", "1"], ["dump", "1"],
        ] {
            let result = try Hangwatch.run(command + ["--dir", missing], cache: fixture.cache)
            #expect(result.status == 3, "\(command): \(result.status) \(result.errors)")
            #expect(
                result.errors == "hangwatch: report directory \(missing) does not exist (--dir: give the directory that holds the reports)\n",
                "\(command): \(result.errors)")
            Self.expectPlain(result)
        }
        let file = fixture.root + "/file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let through = try Hangwatch.run(["list", "--dir", file + "/reports"], cache: fixture.cache)
        #expect(through.status == 3)
        #expect(through.errors == "hangwatch: cannot read \(file)/reports: not a directory (--dir: give the directory that holds the reports)\n", "\(through.errors)")
    }

    @Test func aMissingReportSaysWhatToGive() throws {
        let fixture = try Fixture()
        let missing = fixture.directory + "/hang-missing.json"
        let result = try fixture.hangwatch("show", missing)
        #expect(result.status == 3)
        #expect(
            result.errors == "hangwatch: no report \(missing) (give latest, a report id, or the path of a report file)\n", "\(result.errors)")
        Self.expectPlain(result)
    }

    @Test func badTimesAndDurationsAreExplained() throws {
        let fixture = try Fixture()
        for (option, value) in [("--since", "soon"), ("--until", "1x")] {
            let result = try fixture.hangwatch("list", option, value)
            #expect(result.status == 2)
            #expect(result.errors.hasPrefix("hangwatch: \(option) \(value): expected a"), "\(result.errors)")
        }
        // A length of time: the value, the option, and its help with the units and what a plain number is.
        let duration = try fixture.hangwatch("list", "--min-duration", "long")
        #expect(duration.status == 2)
        #expect(duration.errors.hasPrefix("hangwatch: The value 'long' is invalid for '--min-duration <duration>'"), "\(duration.errors)")
        #expect(duration.errors.contains("500ms, 1.5s, 2m (a plain number is seconds)"), "\(duration.errors)")
    }
}
