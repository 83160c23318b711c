import Foundation
import HangWatchTestSupport
import Testing

@testable import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

@Suite struct DirectoryEntriesTests {
    /// `readdir` packs entries as long as their names (`d_reclen`): the last one in the directory
    /// stream's buffer can end right before unmapped memory. Here an entry ends just before a page
    /// that cannot be read: reading more than its name faults (AddressSanitizer found the copy of
    /// the whole 256-byte `d_name` this replaced: a heap-buffer-overflow in the agent's spool scan).
    @Test func aNameIsReadUpToItsEndAndNoFurther() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let memory = try #require(mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        try #require(memory != MAP_FAILED)
        defer { munmap(memory, 2 * page) }
        try #require(mprotect(memory + page, page, PROT_NONE) == 0)
        let name = "hang-20261122T073358329Z-api-1.json"
        let offset = MemoryLayout<dirent>.offset(of: \.d_name)!
        let length = (offset + name.utf8.count + 1 + 7) & ~7
        let entry = memory + page - length
        entry.initializeMemory(as: UInt8.self, repeating: 0, count: length)
        name.withCString { entry.advanced(by: offset).copyMemory(from: $0, byteCount: name.utf8.count) }
        #expect(DirectoryEntries.name(of: entry.assumingMemoryBound(to: dirent.self)) == name)
    }

    @Test func aNameThatIsNotUTF8IsLeftOut() throws {
        let directory = ReportFixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(FileManager.default.createFile(atPath: directory + "/good.json", contents: Data()))
        let bad = Array((directory + "/bad-").utf8) + [0xff, 0xfe, 0]
        let fd = bad.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o600) }
        try #require(fd >= 0)
        close(fd)
        #expect(try DirectoryEntries.names(in: directory) == ["good.json"])
    }
}
