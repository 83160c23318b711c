import Foundation
import HangWatchTestSupport
import Testing

/// `sudo make install` copies what `make` built, as the README says, and builds nothing itself.
@Suite struct InstallTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized.path

    static func make(_ arguments: [String]) throws -> CommandResult {
        try ExecutableRun.run("/usr/bin/make", ["-C", repository] + arguments, timeout: 120)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/make"), "make is not installed"))
    func installCopiesTheBuiltBinariesAndBuildsNothing() throws {
        let destination = ReportDirectory().path
        defer { try? FileManager.default.removeItem(atPath: destination) }
        // The binaries this test bundle was built with stand in for the release ones.
        let built = (BuiltExecutable.path("hangwatch") as NSString).deletingLastPathComponent
        let result = try Self.make(["install", "DESTDIR=\(destination)", "RELEASE_BIN=\(built)", "SWIFT=/bin/false"])
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        #expect(!result.output.contains("swift build"))
        for path in [
            "/usr/local/bin/hangwatch", "/usr/local/bin/hangwatchd", "/usr/local/lib/systemd/system/hangwatchd.service",
            "/usr/local/lib/tmpfiles.d/hangwatch.conf", "/usr/local/lib/sysusers.d/hangwatch.conf", "/etc/hangwatch/hangwatchd.env",
            "/usr/local/share/bash-completion/completions/hangwatch",
        ] {
            #expect(FileManager.default.fileExists(atPath: destination + path), "\(path) not installed")
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/make"), "make is not installed"))
    func installWithNothingBuiltSaysWhatToRunFirst() throws {
        let destination = ReportDirectory().path
        defer { try? FileManager.default.removeItem(atPath: destination) }
        let result = try Self.make(["install", "DESTDIR=\(destination)", "RELEASE_BIN=\(destination)/nothing", "SWIFT=/bin/false"])
        #expect(result.status != 0)
        #expect(result.errors.contains("is not built; run 'make' (as yourself, not root) first, then 'sudo make install'"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: destination + "/usr/local/bin"))
    }
}
