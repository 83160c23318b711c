import Foundation
import HangWatchReport
import Testing

@testable import HangWatchAgent

@Suite struct SpoolTests {
    @Test func refusesAnUnsafeRoot() throws {
        let fixture = try SpoolFixture()
        try fixture.spool.check()
        #expect(chmod(fixture.root, 0o700) == 0)
        try fixture.spool.check()
        for (mode, reason) in [(mode_t(0o777), "writable by everyone without the sticky bit"), (0o770, "group-writable without the sticky bit")] {
            #expect(chmod(fixture.root, mode) == 0)
            #expect(throws: Spool.Problem.unsafe(path: fixture.root, reason: reason + " (chmod 1770)")) { try fixture.spool.check() }
        }
        #expect(chmod(fixture.root, 0o1777) == 0)
        try fixture.spool.check()
        // Owned by someone else.
        #expect(chown(fixture.root, 12345, 12345) == 0)
        #expect(throws: Spool.Problem.unsafe(path: fixture.root, reason: "owned by uid 12345, not by this user (uid 0) or root")) {
            try fixture.spool.check(effectiveUser: 0)
        }
        try fixture.spool.check(effectiveUser: 12345)
        // A symlink to a good directory is still refused.
        let link = fixture.root + "-link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: fixture.root)
        defer { unlink(link) }
        #expect(throws: Spool.Problem.unsafe(path: link, reason: "it is a symlink")) { try Spool(root: link).check() }
        #expect(throws: Spool.Problem.missing(fixture.root + "/none")) { try Spool(root: fixture.root + "/none").check() }
    }

    @Test func scanFindsReportsHeartbeatsAndLeftoversButNothingElse() throws {
        let fixture = try SpoolFixture()
        try fixture.report(service: "billing", minutesAgo: 5, sequence: 1)
        try fixture.report(service: "cart", minutesAgo: 4, sequence: 1)
        try fixture.report(service: "", minutesAgo: 3, sequence: 1)
        try fixture.write("x", to: "billing/.heartbeat-77")
        try fixture.write("x", to: "billing/.hang-20260101T000000000Z-billing-1-1.json.5.0.tmp")
        try fixture.write("notes", to: "billing/README.txt")
        try fixture.write("{}", to: "outside/hang-20260101T000000000Z-x-1-1.json")
        // A symlinked service directory and a symlinked report are not followed.
        try FileManager.default.createSymbolicLink(atPath: fixture.root + "/linked", withDestinationPath: fixture.root + "/outside")
        try FileManager.default.createSymbolicLink(
            atPath: fixture.root + "/cart/hang-20260101T000000000Z-cart-1-9.json", withDestinationPath: fixture.root + "/outside/hang-20260101T000000000Z-x-1-1.json")
        // A world-writable service directory is skipped.
        try fixture.write("{}", to: "open/hang-20260101T000000000Z-open-1-1.json")
        chmod(fixture.root + "/open", 0o777)
        let scan = try fixture.spool.scan()
        #expect(scan.services.sorted() == ["billing", "cart", "outside"])
        #expect(Set(scan.reports.map { "\($0.service)/\($0.name)" }).count == 4)
        #expect(!scan.reports.contains { $0.service == "cart" && $0.name.contains("cart-1-9") })
        #expect(scan.heartbeats.map(\.name) == [".heartbeat-77"])
        #expect(scan.temporaries.count == 1)
        #expect(scan.skipped.map(\.path) == [fixture.root + "/open", fixture.root + "/cart/hang-20260101T000000000Z-cart-1-9.json"])
        #expect(scan.skipped.map(\.reason) == ["a service directory writable by everyone", "a symlink"])
        #expect(try fixture.spool.scan(only: ["cart"]).reports.map(\.service).sorted() == ["", "cart"])
    }

    @Test func scanLeavesAloneEveryEntryThatIsNotAPlainFileOfItsDirectorysOwner() throws {
        let fixture = try SpoolFixture()
        let good = try fixture.report(service: "billing", minutesAgo: 1, sequence: 1)
        let directory = fixture.root + "/billing/"
        func name(_ sequence: Int) -> String { "hang-20260101T000000000Z-billing-1-\(sequence).json" }
        #expect(mkfifo(directory + name(2), 0o600) == 0)
        #expect(mknod(directory + name(3), S_IFSOCK | 0o600, 0) == 0)
        let device = mknod(directory + name(4), S_IFCHR | 0o600, dev_t(1 << 8 | 3)) == 0
        try fixture.write("{}", to: "outside.json")
        #expect(link(fixture.root + "/outside.json", directory + name(5)) == 0)
        try fixture.write("{}", to: "billing/" + name(6))
        #expect(chown(directory + name(6), 12345, 12345) == 0)
        try fixture.write("{}", to: "billing/" + name(7))
        #expect(chmod(directory + name(7), 0o666) == 0)
        try fixture.write("x", to: "billing/.heartbeat-88")
        #expect(chown(directory + ".heartbeat-88", 12345, 12345) == 0)
        try FileManager.default.createDirectory(atPath: directory + name(8), withIntermediateDirectories: false)
        // Named with "..": not a name any monitor writes, so not the agent's at all.
        try fixture.write("{}", to: "billing/hang-20260101T000000000Z-..-1-9.json")

        let scan = try fixture.spool.scan()
        #expect(scan.reports == [good])
        #expect(scan.heartbeats.isEmpty)
        let reasons = Dictionary(uniqueKeysWithValues: scan.skipped.map { (($0.path as NSString).lastPathComponent, $0.reason) })
        var expected = [
            name(2): "a FIFO", name(3): "a socket", name(5): "a hard link (2 names for one file)",
            name(6): "owned by uid 12345, not by its directory's owner (uid 0)", name(7): "writable by everyone",
            ".heartbeat-88": "owned by uid 12345, not by its directory's owner (uid 0)", name(8): "a directory",
        ]
        if device { expected[name(4)] = "a device node" }
        #expect(reasons == expected)
        // The same file owned by the agent's own user is its own (it rewrote it).
        #expect(chown(directory + name(6), 12345, 12345) == 0)
        let asOwner = try fixture.spool.scan(effectiveUser: 12345)
        #expect(asOwner.reports.map(\.name).sorted() == [good.name, name(6)].sorted(), "\(asOwner.reports.map(\.name)) \(asOwner.skipped)")
    }

    @Test func removesOnlyTheScannedRegularFile() throws {
        let fixture = try SpoolFixture()
        let file = try fixture.report(service: "billing", minutesAgo: 1, sequence: 1)
        // Replaced since the scan: left alone.
        var stale = file
        stale.inode += 1
        #expect(throws: Spool.RemovalError.changed(fixture.spool.path(of: file))) { try fixture.spool.remove(stale) }
        #expect(fixture.exists("billing/" + file.name))
        try fixture.spool.remove(file)
        #expect(!fixture.exists("billing/" + file.name))
        // Removing what is already gone is not an error.
        try fixture.spool.remove(file)

        // A name the agent does not manage, or a path out of the spool: refused.
        var foreign = file
        foreign.name = "README.txt"
        #expect(throws: Spool.RemovalError.self) { try fixture.spool.remove(foreign) }
        var escape = file
        escape.service = ".."
        #expect(throws: Spool.RemovalError.self) { try fixture.spool.remove(escape) }

        // Through a symlinked service directory: refused, and the target stays.
        try fixture.write("{}", to: "outside/hang-20260101T000000000Z-x-1-1.json")
        try FileManager.default.createSymbolicLink(atPath: fixture.root + "/linked", withDestinationPath: fixture.root + "/outside")
        let target = try #require(fixture.spool.file(service: "outside", name: "hang-20260101T000000000Z-x-1-1.json"))
        var viaLink = target
        viaLink.service = "linked"
        #expect(throws: Spool.RemovalError.self) { try fixture.spool.remove(viaLink) }
        // A symlink named like a report: refused, and its target stays.
        try FileManager.default.createSymbolicLink(
            atPath: fixture.root + "/outside/hang-20260101T000000000Z-x-1-2.json", withDestinationPath: fixture.root + "/outside/hang-20260101T000000000Z-x-1-1.json")
        var link = target
        link.name = "hang-20260101T000000000Z-x-1-2.json"
        #expect(throws: Spool.RemovalError.notRecognised(fixture.root + "/outside/" + link.name)) { try fixture.spool.remove(link) }
        #expect(fixture.exists("outside/hang-20260101T000000000Z-x-1-1.json"))
    }
}
