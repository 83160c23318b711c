import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The I/O cases: the main thread blocks in a call whose other end another process or a thread of
/// this one holds for the hold time, or sleeps.
/// - tcp-process: reads a TCP connection (127.0.0.1) whose accepted end a `sleep` child holds
///   (as its descriptor 3); the read ends when the child exits.
/// - unix-thread: reads one end of a UNIX socket pair while thread "cache-refresh" reads the
///   other (each waits for the other to speak), until that thread's read times out and it closes.
/// - pipe: reads a pipe whose write end a `sleep` child holds.
/// - sleep: `usleep` for the hold time.
/// - poll: `poll`s the pipe and the TCP connection (both held by one `sleep` child).
/// - syn-sent: `connect`s to a 127.0.0.1 listener whose accept queue is full (backlog 0, one
///   connection queued): its SYN is dropped and the connect waits in SYN-SENT, until thread
///   "acceptor" accepts the queued one (800 ms later) and the SYN sent again a second after the
///   first gets through.
/// - unix-process: reads a UNIX socket connected to a listener at a path, whose accepted end a
///   `sleep` child holds (a daemon at the other end).
extension WaitScenario {
    func runIO() {
        switch waitCase {
        case "tcp-process":
            let (client, server) = tcpConnection()
            holderPid = spawnHolding(server)
            close(server)
            announce()
            waitForReply(client)
            close(client)
        case "unix-thread":
            var pair: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { fail("socketpair failed", code: 3) }
            let (mine, theirs) = (pair[0], pair[1])
            let hold = holdMicroseconds
            startHolder("cache-refresh") { [self] in
                var timeout = timeval(tv_sec: Int(hold / 1_000_000), tv_usec: Int(hold % 1_000_000))
                setsockopt(theirs, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                held.signal()
                awaitRequest(theirs)
                close(theirs)
            }
            announce()
            waitForReply(mine)
            close(mine)
        case "pipe":
            let (readEnd, writeEnd) = pipeEnds()
            holderPid = spawnHolding(writeEnd)
            close(writeEnd)
            announce()
            waitForReply(readEnd)
            close(readEnd)
        case "sleep":
            announce()
            napFor(holdMicroseconds)
        case "poll":
            let (readEnd, writeEnd) = pipeEnds()
            let (client, server) = tcpConnection()
            holderPid = spawnHolding(writeEnd, server)
            close(writeEnd)
            close(server)
            announce()
            waitForEither(readEnd, client)
            close(readEnd)
            close(client)
        case "syn-sent":
            let (listener, port) = tcpListener(backlog: 0)
            let queued = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard connectTo(queued, port: port) else { fail("could not connect to 127.0.0.1", code: 3) }
            let hold = holdMicroseconds
            startHolder("acceptor") { [self] in
                held.signal()
                // Before the SYN is sent again (a second after the first): the connect then ends.
                usleep(800_000)
                let accepted = accept(listener, nil, nil)
                usleep(hold)
                close(accepted)
                after &+= 6
            }
            FileHandle.standardOutput.write(Data("{\"waiterTid\": \(currentTID()), \"port\": \(port)}\n".utf8))
            held.wait()
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            connectToTheFullQueue(client, port: port)
            close(client)
            close(queued)
        case "unix-process":
            let path = FileManager.default.temporaryDirectory.path + "/hangwatch-waits-\(getpid()).sock"
            let (client, server) = unixConnection(path: path)
            holderPid = spawnHolding(server)
            close(server)
            // (The path is the temporary directory's `hangwatch-waits-<pid>.sock`: the waiter's tid is the pid.)
            FileHandle.standardOutput.write(Data("{\"waiterTid\": \(currentTID()), \"holderPid\": \(holderPid)}\n".utf8))
            waitForReply(client)
            close(client)
            unlink(path)
        default:
            fail("unknown case \(waitCase)")
        }
    }

    /// A listener on 127.0.0.1 (an ephemeral port) with this backlog.
    private func tcpListener(backlog: Int32) -> (Int32, UInt16) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && listen(listener, backlog) == 0 && getsockname(listener, socketAddress, &length) == 0
            }
        }
        guard bound else { fail("could not listen on 127.0.0.1", code: 3) }
        return (listener, UInt16(bigEndian: address.sin_port))
    }

    private func connectTo(_ descriptor: Int32, port: UInt16) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    @inline(never) func connectToTheFullQueue(_ descriptor: Int32, port: UInt16) {
        if connectTo(descriptor, port: port) { after &+= 7 }
        after &+= 7
    }

    /// A UNIX stream socket connected to a listener at `path`: the client's end and the accepted one.
    private func unixConnection(path: String) -> (client: Int32, server: Int32) {
        unlink(path)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { fail("socket path too long", code: 3) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && listen(listener, 1) == 0 && connect(client, socketAddress, length) == 0
            }
        }
        let server = connected ? accept(listener, nil, nil) : -1
        guard server >= 0 else { fail("could not connect to \(path)", code: 3) }
        close(listener)
        return (client, server)
    }

    /// A connected pair over 127.0.0.1: the client's end and the accepted one.
    private func tcpConnection() -> (client: Int32, server: Int32) {
        let (listener, port) = tcpListener(backlog: 1)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let connected = connectTo(client, port: port)
        let server = accept(listener, nil, nil)
        guard connected, server >= 0 else { fail("could not connect to 127.0.0.1", code: 3) }
        close(listener)
        return (client, server)
    }

    private func pipeEnds() -> (Int32, Int32) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { fail("pipe failed", code: 3) }
        return (ends[0], ends[1])
    }

    /// Starts `sleep` for the hold time holding `descriptors` (as its 3, 4, ...).
    private func spawnHolding(_ descriptors: Int32...) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (index, descriptor) in descriptors.enumerated() {
            posix_spawn_file_actions_adddup2(&actions, descriptor, 3 + Int32(index))
        }
        var pid: pid_t = 0
        let arguments = ["/bin/sleep", String(Double(holdMicroseconds) / 1e6)]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        guard posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { fail("could not start sleep", code: 3) }
        return pid
    }

    @inline(never) func waitForReply(_ descriptor: Int32) {
        var byte: UInt8 = 0
        if read(descriptor, &byte, 1) > 0 { after &+= 1 }
        after &+= 1
    }

    @inline(never) func awaitRequest(_ descriptor: Int32) {
        var byte: UInt8 = 0
        if read(descriptor, &byte, 1) > 0 { after &+= 3 }
        after &+= 3
    }

    @inline(never) func napFor(_ microseconds: UInt32) {
        usleep(microseconds)
        after &+= 4
    }

    @inline(never) func waitForEither(_ first: Int32, _ second: Int32) {
        var descriptors = [pollfd(fd: first, events: Int16(POLLIN), revents: 0), pollfd(fd: second, events: Int16(POLLIN), revents: 0)]
        if poll(&descriptors, 2, -1) > 0 { after &+= 5 }
        after &+= 5
    }
}
