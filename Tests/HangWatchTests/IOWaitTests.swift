import Foundation
@testable import HangWatch
import Testing

/// An I/O wait's call decided from its number and arguments, and its descriptors named from the
/// tables Linux writes (`/proc/net`, `mountinfo`, `sock_diag`): parsers on lines as the kernel
/// writes them, then the kernel's own answers for descriptors this test opens (no timing).
@Suite struct IOWaitTests {
    #if arch(x86_64)
    @Test(arguments: [
        (0, [7, 0x1000, 1, 0], IOCall.descriptor(7, .read)),
        (45, [9, 0x1000, 1, 0], IOCall.descriptor(9, .read)),
        (1, [3, 0x1000, 1, 0], IOCall.descriptor(3, .write)),
        (42, [5, 0x1000, 16, 0], IOCall.descriptor(5, .connect)),
        (288, [4, 0, 0, 0x80000], IOCall.descriptor(4, .accept)),
        (74, [6, 0, 0, 0], IOCall.descriptor(6, .sync)),
        (7, [0x2000, 3, 0xffff_ffff_ffff_ffff, 0], IOCall.pollArray(address: 0x2000, count: 3)),
        (232, [11, 0x3000, 64, 0], IOCall.epoll(11)),
        (23, [9, 0x4000, 0, 0], IOCall.select(count: 9, read: 0x4000, write: 0, except: 0)),
        (35, [0x5000, 0, 0, 0], IOCall.sleep(clock: 1, absolute: false, request: 0x5000)),
        (230, [0, 1, 0x6000, 0], IOCall.sleep(clock: 0, absolute: true, request: 0x6000)),
    ] as [(Int, [UInt], IOCall)])
    func anIOCallIsDecidedFromItsNumberAndArguments(_ number: Int, _ arguments: [UInt], _ call: IOCall) {
        #expect(IOCall.classify(syscall: number, arguments: arguments + [0, 0]) == call)
    }
    #endif

    @Test func aFutexOrAnUnknownCallIsNoIOWait() {
        #expect(IOCall.classify(syscall: Syscalls.futex, arguments: [0x1000, 128, 2, 0, 0, 0]) == nil)
        #expect(IOCall.classify(syscall: 9999, arguments: [0, 0, 0, 0, 0, 0]) == nil)
    }

    @Test func pollSelectAndEpollSetsNameTheirDescriptorsAndEvents() {
        #expect(IOCall.pollDescriptors([(3, 1), (-1, 1), (8, 4), (9, 5)]).map { "\($0.0) \($0.1)" } == ["3 in", "8 out", "9 in,out"])
        #expect(IOCall.selectDescriptors([0b1001_0000, 1], count: 70) == [4, 7, 64])
        #expect(IOCall.selectDescriptors([0b1001_0000], count: 5) == [4])
        let fdinfo = "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\ntfd:        7 events:       19 data:                7  pos:0 ino:4e1 sdev:8\ntfd:       12 events:        4 data: c pos:0 ino:4e2 sdev:8\n"
        #expect(IOCall.epollDescriptors(fdinfo: fdinfo).map { "\($0.0) \($0.1)" } == ["7 in", "12 out"])
    }

    @Test func procNetTcpRowsGiveAddressesStateQueuesAndInode() {
        let text = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 31337 1 0000000000000000 100 0 0 10 0
               1: 0100007F:C35A 0100007F:1F90 01 0000000A:00000003 00:00000000 00000000  1000        0 4242 1 0000000000000000 20 4 30 10 -1
            """
        let rows = ProcNetTables.inetSockets(text)
        #expect(rows.count == 2)
        #expect(rows[0].local == "127.0.0.1:8080" && rows[0].remote == "0.0.0.0:0" && ProcNetTables.tcpState(rows[0].stateCode) == "LISTEN")
        #expect(rows[1].local == "127.0.0.1:50010" && rows[1].remote == "127.0.0.1:8080" && rows[1].inode == 4242)
        #expect(rows[1].sendQueue == 10 && rows[1].receiveQueue == 3 && ProcNetTables.tcpState(rows[1].stateCode) == "ESTABLISHED")
        #expect(ProcNetTables.tcpState(0x02) == "SYN-SENT" && ProcNetTables.udpState(0x07) == "UNCONN")
    }

    @Test(arguments: [
        ("00000000000000000000000001000000:0050", "[::1]:80"),
        ("00000000000000000000000000000000:1F90", "[::]:8080"),
        ("0000000000000000FFFF00000100007F:1F90", "127.0.0.1:8080"),
        ("B80D0120000000000000000001000000:01BB", "[2001:db8::1]:443"),
        ("000080FE000000004A5B0FFE2A1F3C4D:0016", "[fe80::fe0f:5b4a:4d3c:1f2a]:22"),
        ("0A00000A:0016", "10.0.0.10:22"),
    ])
    func anAddressIsWrittenAsHostColonPort(_ field: String, _ text: String) {
        #expect(ProcNetTables.address(field) == text)
    }

    @Test func ipv6TextFollowsRFC5952() {
        func bytes(_ groups: [UInt16]) -> [UInt8] { groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] } }
        #expect(ProcNetTables.ipv6Text(bytes([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1])) == "2001:db8::1:0:0:1")
        #expect(ProcNetTables.ipv6Text(bytes([0x2001, 0xdb8, 0, 1, 1, 1, 1, 1])) == "2001:db8:0:1:1:1:1:1")
        #expect(ProcNetTables.ipv6Text(bytes([0, 0, 0, 0, 0, 0, 0, 0])) == "::")
    }

    @Test func procNetUnixRowsGiveTypePathAndListening() {
        let text = """
            Num       RefCount Protocol Flags    Type St Inode Path
            0000000000000000: 00000002 00000000 00010000 0001 01 20123 /run/postgresql/.s.PGSQL.5432
            0000000000000000: 00000003 00000000 00000000 0001 03 20999
            0000000000000000: 00000002 00000000 00000000 0002 01 21000 @hangwatch abstract
            """
        let rows = ProcNetTables.unixSockets(text)
        #expect(rows.map(\.inode) == [20123, 20999, 21000])
        #expect(rows[0].listening && rows[0].path == "/run/postgresql/.s.PGSQL.5432" && rows[0].type == "stream")
        #expect(!rows[1].listening && rows[1].path == nil)
        #expect(rows[2].type == "dgram" && rows[2].path == "@hangwatch abstract")
    }

    @Test func mountinfoGivesTheFileSystemDeviceAndMountPoint() {
        let text = """
            22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
            45 22 0:52 / /mnt/shared\\040data rw,nosuid shared:30 - nfs4 fileserver:/export rw,vers=4.2
            """
        let mounts = ProcNetTables.mounts(text)
        #expect(mounts.count == 2)
        #expect(mounts[0] == ProcNetTables.Mount(id: 22, device: "8:1", mountPoint: "/", filesystem: "ext4", source: "/dev/sda1"))
        #expect(mounts[1].mountPoint == "/mnt/shared data" && mounts[1].filesystem == "nfs4" && mounts[1].source == "fileserver:/export")
        #expect(ProcNetTables.fdinfoField("mnt_id", in: "pos:\t0\nflags:\t0100002\nmnt_id:\t45\n") == "45")
    }

    @Test func aUnixDiagAnswerGivesThePeerAndAnAbstractName() {
        // nlmsghdr (16) + unix_diag_msg (16) + UNIX_DIAG_NAME ("\0svc", padded) + UNIX_DIAG_PEER.
        var bytes: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        append(UInt32(16 + 16 + 8 + 8)); append(UInt16(20)); append(UInt16(0)); append(UInt32(1)); append(UInt32(0))
        append(UInt8(1)); append(UInt8(1)); append(UInt8(1)); append(UInt8(0)); append(UInt32(777)); append(UInt32(0)); append(UInt32(0))
        append(UInt16(8)); append(UInt16(0)); bytes += [0, 0x73, 0x76, 0x63]
        append(UInt16(8)); append(UInt16(2)); append(UInt32(778))
        #expect(UnixSocketPeers.parse(bytes, inode: 777) == UnixSocketPeers.Answer(peer: 778, name: "@svc"))
        #expect(UnixSocketPeers.parse(bytes, inode: 999) == nil, "an answer about another socket")
        #expect(UnixSocketPeers.parse(Array(bytes.prefix(20)), inode: 777) == nil, "a short answer")
    }

    // MARK: The kernel's answers, for descriptors this test opens

    static func inode(_ descriptor: Int32) -> UInt64 {
        var info = stat()
        fstat(descriptor, &info)
        return UInt64(info.st_ino)
    }

    @Test func theKernelNamesAUnixSocketPairsPeer() throws {
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        let answer = try #require(UnixSocketPeers.ask(inode: Self.inode(pair[0])), "sock_diag did not answer")
        #expect(answer.peer == Self.inode(pair[1]) && answer.name == nil)
    }

    @Test func aFileIsNamedWithItsFileSystemAndAPipeWithThisProcessAtTheOtherEnd() throws {
        let naming = DescriptorNaming(now: { 0 })
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hangwatch-io-\(getpid())").path
        let file = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        try #require(file >= 0)
        defer { close(file); unlink(path) }
        let named = naming.name(file, waiter: 0, direction: .read)
        #expect(named.type == "file" && named.path == path, "\(named)")
        let mount = ProcNetTables.mounts(try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8))
            .filter { path.hasPrefix($0.mountPoint) }.max { $0.mountPoint.count < $1.mountPoint.count }
        #expect(named.filesystem != nil && named.filesystem == mount?.filesystem && named.device == mount?.device, "\(named) vs \(String(describing: mount))")
        #expect(named.peers.isEmpty && named.peerNote?.contains("no other end") == true)

        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let pipe = naming.name(ends[0], waiter: 0, direction: .read)
        #expect(pipe.type == "pipe" && pipe.peers == [.process(getpid())], "\(pipe)")
        // The write end of a pipe nobody else holds: for a write, the read end is this process's.
        #expect(naming.name(ends[1], waiter: 0, direction: .write).peers == [.process(getpid())])
        #expect(naming.name(999_999, waiter: 0, direction: .read).peerNote == "the descriptor is closed")
    }
}
