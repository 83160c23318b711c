import Synchronization
import Foundation
@testable import HangWatch
import HangWatchTestSupport
import Testing

/// An I/O wait's call decided from its number and arguments, and its descriptors named: the texts
/// (addresses, `mountinfo`) and `sock_diag` messages as the kernel writes them, then the kernel's
/// own answers for descriptors this test opens (no timing).
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

    /// A sleep's `timespec` is read from the sleeping thread's memory: one "forever" (`Int.max`
    /// seconds) or not valid at all has no time, never an overflow (a trap on the watchdog).
    @Test func aSleepsTimeIsReadWithoutOverflow() {
        #expect(LinuxWaitInspector.microseconds(timespec(tv_sec: 2, tv_nsec: 500_000_000)) == 2_500_000)
        #expect(LinuxWaitInspector.microseconds(timespec(tv_sec: Int.max, tv_nsec: 999_999_999)) == nil)
        #expect(LinuxWaitInspector.microseconds(timespec(tv_sec: 1 << 40, tv_nsec: 0)) == nil)
        #expect(LinuxWaitInspector.microseconds(timespec(tv_sec: -1, tv_nsec: 0)) == nil)
        #expect(LinuxWaitInspector.microseconds(timespec(tv_sec: 1, tv_nsec: 1_000_000_000)) == nil)
    }

    @Test func pollSelectAndEpollSetsNameTheirDescriptorsAndEvents() {
        #expect(IOCall.pollDescriptors([(3, 1), (-1, 1), (8, 4), (9, 5)]).map { "\($0.0) \($0.1)" } == ["3 in", "8 out", "9 in,out"])
        #expect(IOCall.selectDescriptors([0b1001_0000, 1], count: 70) == [4, 7, 64])
        #expect(IOCall.selectDescriptors([0b1001_0000], count: 5) == [4])
        let fdinfo = "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\ntfd:        7 events:       19 data:                7  pos:0 ino:4e1 sdev:8\ntfd:       12 events:        4 data: c pos:0 ino:4e2 sdev:8\n"
        #expect(IOCall.epollDescriptors(fdinfo: fdinfo).map { "\($0.0) \($0.1)" } == ["7 in", "12 out"])
    }

    @Test(arguments: [
        ([127, 0, 0, 1], 8080, "127.0.0.1:8080"),
        ([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 80, "[::1]:80"),
        ([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 8080, "[::]:8080"),
        ([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1], 8080, "127.0.0.1:8080"),
        ([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 443, "[2001:db8::1]:443"),
        ([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xfe, 0x0f, 0x5b, 0x4a, 0x4d, 0x3c, 0x1f, 0x2a], 22, "[fe80::fe0f:5b4a:4d3c:1f2a]:22"),
    ] as [([UInt8], UInt16, String)])
    func anAddressIsWrittenAsHostColonPort(_ bytes: [UInt8], _ port: UInt16, _ text: String) {
        #expect(SocketDiagnostics.InetAddress(bytes: bytes, port: port).text == text)
    }

    /// The address a `connect` was given, read from its `sockaddr` (a socket still connecting has
    /// no peer name): IPv4 and IPv6; too few bytes or another family give none.
    @Test func aConnectsAddressIsReadFromTheSockaddrItWasGiven() {
        var v4 = sockaddr_in()
        v4.sin_family = sa_family_t(AF_INET)
        v4.sin_port = UInt16(5432).bigEndian
        v4.sin_addr.s_addr = inet_addr("10.0.0.9")
        #expect(withUnsafeBytes(of: &v4) { DescriptorNaming.inetAddress(sockaddr: $0) }?.text == "10.0.0.9:5432")
        #expect(withUnsafeBytes(of: &v4) { DescriptorNaming.inetAddress(sockaddr: UnsafeRawBufferPointer(rebasing: $0.prefix(8))) }?.text == nil)
        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = UInt16(443).bigEndian
        withUnsafeMutableBytes(of: &v6.sin6_addr) { $0[15] = 1 }
        #expect(withUnsafeBytes(of: &v6) { DescriptorNaming.inetAddress(sockaddr: $0) }?.text == "[::1]:443")
        var unix = sockaddr_un()
        unix.sun_family = sa_family_t(AF_UNIX)
        #expect(withUnsafeBytes(of: &unix) { DescriptorNaming.inetAddress(sockaddr: $0) }?.text == nil)
    }

    @Test func ipv6TextFollowsRFC5952() {
        func bytes(_ groups: [UInt16]) -> [UInt8] { groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] } }
        #expect(EndpointText.ipv6(bytes([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1])) == "2001:db8::1:0:0:1")
        #expect(EndpointText.ipv6(bytes([0x2001, 0xdb8, 0, 1, 1, 1, 1, 1])) == "2001:db8:0:1:1:1:1:1")
        #expect(EndpointText.ipv6(bytes([0, 0, 0, 0, 0, 0, 0, 0])) == "::")
        #expect(EndpointText.tcpState(0x02) == "SYN-SENT" && EndpointText.tcpState(0x0A) == "LISTEN" && EndpointText.tcpState(0x08) == "CLOSE-WAIT")
    }

    @Test func mountinfoGivesTheFileSystemDeviceAndMountPoint() {
        let text = """
            22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
            45 22 0:52 / /mnt/shared\\040data rw,nosuid shared:30 - nfs4 fileserver:/export rw,vers=4.2
            """
        let mounts = EndpointText.mounts(text)
        #expect(mounts.count == 2)
        #expect(mounts[0] == EndpointText.Mount(id: 22, device: "8:1", mountPoint: "/", filesystem: "ext4", source: "/dev/sda1"))
        #expect(mounts[1].mountPoint == "/mnt/shared data" && mounts[1].filesystem == "nfs4" && mounts[1].source == "fileserver:/export")
        #expect(EndpointText.fdinfoField("mnt_id", in: "pos:\t0\nflags:\t0100002\nmnt_id:\t45\n") == "45")
    }

    @Test func aUnixDiagAnswerGivesThePeerAndAnAbstractName() {
        // nlmsghdr (16) + unix_diag_msg (16) + UNIX_DIAG_NAME ("\0svc", padded) + UNIX_DIAG_PEER.
        var bytes: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        append(UInt32(16 + 16 + 8 + 8)); append(UInt16(20)); append(UInt16(0)); append(UInt32(1)); append(UInt32(0))
        append(UInt8(1)); append(UInt8(1)); append(UInt8(1)); append(UInt8(0)); append(UInt32(777)); append(UInt32(0)); append(UInt32(0))
        append(UInt16(8)); append(UInt16(0)); bytes += [0, 0x73, 0x76, 0x63]
        append(UInt16(8)); append(UInt16(2)); append(UInt32(778))
        #expect(SocketDiagnostics.parseUnix(bytes, inode: 777) == SocketDiagnostics.UnixAnswer(peer: 778, name: "@svc", listening: false))
        #expect(SocketDiagnostics.parseUnix(bytes, inode: 999) == nil, "an answer about another socket")
        #expect(SocketDiagnostics.parseUnix(Array(bytes.prefix(20)), inode: 777) == nil, "a short answer")
        bytes[18] = 10
        #expect(SocketDiagnostics.parseUnix(bytes, inode: 777)?.listening == true)
    }

    @Test func anInetDiagRequestNamesTheSocketByItsOwnAddressesAndAnErrorIsNoSocket() {
        let local = SocketDiagnostics.InetAddress(bytes: [127, 0, 0, 1], port: 0x1F90)
        let remote = SocketDiagnostics.InetAddress(bytes: [10, 0, 0, 9], port: 0xC35A)
        let request = SocketDiagnostics.inetRequest(from: local, to: remote, protocol: 6)
        #expect(request.count == 16 + 56 && request[16] == UInt8(AF_INET) && request[17] == 6)
        // The socket found is the one whose own address is `to` and whose peer is `from`.
        #expect(Array(request[24..<28]) == [0xC3, 0x5A, 0x1F, 0x90], "sport (to's), dport (from's), big-endian")
        #expect(Array(request[28..<32]) == [10, 0, 0, 9] && Array(request[44..<48]) == [127, 0, 0, 1])
        let mixed = SocketDiagnostics.inetRequest(
            from: local, to: SocketDiagnostics.InetAddress(bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], port: 80), protocol: 6)
        #expect(mixed[16] == UInt8(AF_INET6) && Array(mixed[44..<60]) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1])
        var error = [UInt8](repeating: 0, count: 36)
        error[0] = 36
        error[4] = 2  // NLMSG_ERROR
        #expect(SocketDiagnostics.parseInet(error) == nil)
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
        let answer = try #require(SocketDiagnostics.unix(inode: Self.inode(pair[0])), "sock_diag did not answer")
        #expect(answer.peer == Self.inode(pair[1]) && answer.name == nil && !answer.listening)
    }

    /// A TCP connection over 127.0.0.1 inside this test: each end is named by itself (addresses,
    /// state, queues), and the kernel's exact lookup finds the accepted end; this process holds it.
    @Test func aLoopbackConnectionsOtherEndIsFoundByTheKernelsExactLookup() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        try #require(bound)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) == 0 }
        }
        let server = accept(listener, nil, nil)
        defer { [listener, client, server].forEach { close($0) } }
        try #require(connected && server >= 0)
        var byte: UInt8 = 7
        #expect(write(server, &byte, 1) == 1)
        let naming = DescriptorNaming(now: { 0 }, budgetMicroseconds: nil)
        let named = naming.name(client, waiter: 0, direction: .read)
        let port = UInt16(bigEndian: address.sin_port)
        #expect(named.type == "tcp" && named.state == "ESTABLISHED" && named.remote == "127.0.0.1:\(port)", "\(named)")
        #expect(named.local?.hasPrefix("127.0.0.1:") == true && named.local != named.remote)
        #expect(Eventually.holds(timeout: 5) { naming.name(client, waiter: 0, direction: .read).receiveQueue == 1 }, "the byte sent is queued")
        #expect(named.peers == [.process(getpid())], "\(named)")
        let local = try #require(DescriptorNaming.inetAddress(client, getsockname))
        let remote = try #require(DescriptorNaming.inetAddress(client, getpeername))
        #expect(SocketDiagnostics.inetSocket(from: local, to: remote, protocol: 6)?.inode == Self.inode(server))
        // The listener: named as one, with no other end.
        let listening = naming.name(listener, waiter: 0, direction: .accept)
        #expect(listening.state == "LISTEN" && listening.peers.isEmpty && listening.peerNote?.contains("listening") == true, "\(listening)")
    }

    @Test func aFileIsNamedWithItsFileSystemAndAPipeWithThisProcessAtTheOtherEnd() throws {
        let naming = DescriptorNaming(now: { 0 }, budgetMicroseconds: nil)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hangwatch-io-\(getpid())").path
        let file = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        try #require(file >= 0)
        defer { close(file); unlink(path) }
        let named = naming.name(file, waiter: 0, direction: .read)
        #expect(named.type == "file" && named.path == path, "\(named)")
        let mount = EndpointText.mounts(try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8))
            .filter { path.hasPrefix($0.mountPoint) }.max { $0.mountPoint.count < $1.mountPoint.count }
        #expect(named.filesystem != nil && named.filesystem == mount?.filesystem && named.device == mount?.device, "\(named) vs \(String(describing: mount))")
        #expect(named.peers.isEmpty && named.peerNote?.contains("no other end") == true)

        var ends: [Int32] = [0, 0]
        // Close-on-exec: a child another test starts meanwhile would hold its ends otherwise.
        // (glibc's pipe2, which Swift's Glibc module does not declare.)
        typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
        let pipe2 = unsafeBitCast(try #require(dlsym(nil, "pipe2")), to: Pipe2.self)
        try #require(pipe2(&ends, O_CLOEXEC) == 0)
        defer { ends.forEach { close($0) } }
        let pipe = naming.name(ends[0], waiter: 0, direction: .read)
        #expect(pipe.type == "pipe" && pipe.peers == [.process(getpid())], "\(pipe)")
        // The write end of a pipe nobody else holds: for a write, the read end is this process's.
        #expect(naming.name(ends[1], waiter: 0, direction: .write).peers == [.process(getpid())])
        #expect(naming.name(999_999, waiter: 0, direction: .read).peerNote == "the descriptor is closed")
    }

    /// The scan of every process's descriptors reads a bounded part at each look (a host with ten
    /// thousand sockets took 64 ms in one go): until it is done a look says how far it got, and a
    /// later look goes on where it stopped and names the other end.
    @Test func theOwnerScanIsReadAPartAtEachLookAndNamesTheOtherEndWhenDone() throws {
        // 150 pipes more (300 descriptors) before the one waited on: more than one look's part.
        var crowd: [Int32] = []
        defer { crowd.forEach { close($0) } }
        for _ in 0..<150 {
            var ends: [Int32] = [0, 0]
            try #require(pipe(&ends) == 0)
            crowd += ends
        }
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        // A clock that moves a millisecond each time it is read: a later look's budget is spent
        // at its first check (after 32 descriptors), the first look's (8 times as much) at its fourth.
        let clock = Mutex<UInt64>(0)
        let tick = { clock.withLock { $0 += 1_000; return $0 } }
        let naming = DescriptorNaming(now: tick, spent: tick)
        var looks = 0
        var named = naming.name(ends[0], waiter: 0, direction: .read)
        let first = named
        while named.peers.isEmpty, looks < 100 {
            looks += 1
            named = naming.name(ends[0], waiter: 0, direction: .read)
        }
        #expect(first.peers.isEmpty && first.peerNote?.hasPrefix("its holder not found yet: 0 of ") == true, "\(first)")
        #expect(named.peers == [.process(getpid())], "\(named)")
        // 300 descriptors and more: the first part at most 4 ms (128 of them), then 32 at a look:
        // at least 5 looks after the first.
        #expect(looks >= 5 && looks < 100, "\(looks) looks")

        // Without a budget (a dump's naming) one look reads everything, however the clock moves.
        let whole = DescriptorNaming(now: tick, budgetMicroseconds: nil, spent: tick)
        #expect(whole.name(ends[0], waiter: 0, direction: .read).peers == [.process(getpid())])
    }
}
