import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// The permission model of the installed spool, on a real directory: the root is 1770 with a
/// default ACL for the agent's user; a service writes its own directory (0770, reports 0640). The
/// agent's user can read, write and delete there; another member of the group cannot touch it.
/// Run as root (CI does), with `nobody` as the agent and `daemon` as another service.
@Suite(.serialized) struct SpoolPermissionTests {
    static var canSwitchUsers: Bool { geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") }

    /// Runs `command` with `sh -c` as `user` (primary group `group`); true if it succeeded.
    static func asUser(_ user: String, group: String, _ command: String) throws -> Bool {
        try UnitFileTests.run("/usr/sbin/runuser", ["-u", user, "-g", group, "--", "/bin/sh", "-c", command]).status == 0
    }

    @Test(.enabled(if: canSwitchUsers, "needs root and runuser"))
    func aServiceWritesItsOwnDirectoryAndTheAgentAllOfThem() throws {
        let base = FileManager.default.temporaryDirectory.path + "/hangwatchd-perm-\(getpid())"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        chmod(base, 0o755)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let root = base + "/reports"
        let conf = base + "/spool.conf"
        // The root belongs to the agent's user, as tmpfiles.d/hangwatch.conf makes it.
        try "d \(root) 1770 nobody root -\na+ \(root) - - - - d:u:nobody:rwx,d:g::---,d:o::---,d:m::rwx\n"
            .write(toFile: conf, atomically: true, encoding: .utf8)
        #expect(try UnitFileTests.run("/usr/bin/systemd-tmpfiles", ["--create", conf]).status == 0)

        // The service (root here, a member of the root's group) writes its report the monitor's way.
        let store = ReportStore(directory: root + "/billing", access: .sharedWithAgent)
        try store.prepare()
        let demo = try DemoReports.directory.get()
        let first = try #require(try ReportStore(directory: demo).list().first)
        var report = try ReportReader().read(path: first.path)
        report.service = "billing"
        let path = try store.write(report)

        // The agent's user reads the report, writes beside it, and deletes it.
        #expect(try Self.asUser("nobody", group: "nogroup", "test -r '\(path)'"))
        #expect(try Self.asUser("nobody", group: "nogroup", "echo x > '\(root)/billing/.probe' && rm '\(root)/billing/.probe'"))
        // Another service, in the spool's group, makes its own directory...
        #expect(try Self.asUser("daemon", group: "root", "mkdir '\(root)/cart'"))
        // ...but cannot read, write or remove billing's.
        #expect(try !Self.asUser("daemon", group: "root", "cat '\(path)' > /dev/null"))
        #expect(try !Self.asUser("daemon", group: "root", "touch '\(root)/billing/x'"))
        #expect(try !Self.asUser("daemon", group: "root", "mv '\(root)/billing' '\(root)/stolen'"))
        #expect(try Self.asUser("nobody", group: "nogroup", "rm '\(path)'"))
    }
}
