import Foundation
import HangWatch

/// Figure 20: what looking at a blocked hang's wait costs the watchdog, per sample: a thread
/// blocked on a mutex whose holder sleeps `depth` frames deep; the waiter's own sample (the
/// `/proc` walk) and then the wait: the lock read, the holder's stack walked (cached while it
/// stays in the same call, as in a hang), the holder's own wait looked at.
struct WaitLookFigure {
    var depth = 44
    var count = 500

    struct Outcome {
        var holderFrames: Int
        var first: (sample: Double, wait: Double)
        var sample: [Double]
        var wait: [Double]
    }

    func measure() throws -> Outcome {
        // The unwinder reads the images a monitor publishes when it starts; no monitor runs here.
        try CaptureProbe.install(signal: CaptureProbe.defaultSignal)
        let lock = NSLock()
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            lock.lock()
            held.signal()
            holdAtDepth(44, until: release)
            lock.unlock()
        }
        holder.stackSize = 1 << 20
        holder.start()
        held.wait()
        nonisolated(unsafe) var waiterTID: Int32 = 0
        let waiting = DispatchSemaphore(value: 0)
        let waiter = Thread {
            waiterTID = benchThreadID()
            waiting.signal()
            lock.lock()
            lock.unlock()
        }
        waiter.start()
        waiting.wait()
        defer { release.signal() }
        let inspector = CaptureProbe.waitInspector()
        var first: CaptureProbe.WaitLookTiming?
        for _ in 0..<500 where first?.holderThread == nil {
            usleep(2000)
            first = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector)
        }
        guard let first, first.holderThread != nil else { throw BenchError.setup("no holder found") }
        var samples: [Double] = []
        var waits: [Double] = []
        for _ in 0..<count {
            guard let look = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector) else { continue }
            samples.append(Double(look.sampleNanoseconds) / 1000)
            waits.append(Double(look.waitNanoseconds) / 1000)
        }
        return Outcome(
            holderFrames: first.holderFrames, first: (Double(first.sampleNanoseconds) / 1000, Double(first.waitNanoseconds) / 1000),
            sample: samples, wait: waits)
    }
}

@inline(never)
func holdAtDepth(_ depth: Int, until release: DispatchSemaphore) {
    if depth > 0 {
        holdAtDepth(depth - 1, until: release)
        blackHole(UInt64(depth))
        return
    }
    release.wait()
}

/// This thread's id (`/proc/thread-self`).
func benchThreadID() -> Int32 {
    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return Int32(target.split(separator: "/").last ?? "") ?? 0
}

/// Figure 20b: what looking at an I/O wait costs: a thread blocked reading a TCP connection over
/// 127.0.0.1 whose other end a `sleep` child holds. The first look of an inspector asks the socket
/// and the kernel (`sock_diag`) and reads every process's descriptors (the host-wide scan, `cold`);
/// the looks after it within a second reuse that scan (`warm`, as a hang's samples do).
///
/// With `crowd` (figure 20c, issue 45's goal): the same look on a host with `crowd.sockets` more
/// TCP sockets (loopback pairs, held by a second `sleep` child) and the hung process holding
/// `crowd.descriptors` more descriptors of its own.
struct IOWaitLookFigure {
    var count = 500
    var coldCount = 20
    var crowd: (sockets: Int, descriptors: Int)? = nil

    struct Outcome {
        var processes: Int
        /// Every look of a fresh inspector until it named the other end, microseconds.
        var cold: [Double]
        /// How many looks that took, each time.
        var looksToName: [Int]
        var warm: [Double]
        /// TCP sockets on the host while it was measured (`/proc/net/sockstat`'s `TCP: inuse`).
        var hostTCPSockets: Int
        /// Descriptors of this process while it was measured.
        var ownDescriptors: Int
    }

    func measure() throws -> Outcome {
        try CaptureProbe.install(signal: CaptureProbe.defaultSignal)
        let crowded = try crowd.map { try Crowd(sockets: $0.sockets, descriptors: $0.descriptors) }
        defer { crowded?.end() }
        guard let (listener, address) = Self.loopbackListener(backlog: 1) else { throw BenchError.setup("no loopback listener") }
        let client = Self.connected(to: address)
        let server = client >= 0 ? accept(listener, nil, nil) : -1
        guard server >= 0 else { throw BenchError.setup("no loopback connection") }
        close(listener)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, server, 3)
        var child: pid_t = 0
        let words = ["/bin/sleep", "120"]
        let argv = words.map { strdup($0) } + [nil]
        guard posix_spawn(&child, "/bin/sleep", &actions, nil, argv, environ) == 0 else { throw BenchError.setup("could not start sleep") }
        argv.forEach { free($0) }
        posix_spawn_file_actions_destroy(&actions)
        close(server)
        defer {
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
            close(client)
        }
        nonisolated(unsafe) var waiterTID: Int32 = 0
        let waiting = DispatchSemaphore(value: 0)
        Thread {
            waiterTID = benchThreadID()
            waiting.signal()
            var byte: UInt8 = 0
            _ = read(client, &byte, 1)
        }.start()
        waiting.wait()
        // A fresh inspector each time: its looks until one names the other end (a scan of every
        // process's descriptors, a bounded part at each look), each timed.
        var cold: [Double] = []
        var looksToName: [Int] = []
        for _ in 0..<coldCount {
            usleep(2000)
            let inspector = CaptureProbe.waitInspector()
            for attempt in 1...2000 {
                guard let look = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector), look.endpoints == 1 else { break }
                cold.append(Double(look.waitNanoseconds) / 1000)
                if let holder = look.holderProcess {
                    guard holder == child else { throw BenchError.setup("the other end was named \(holder), not \(child)") }
                    looksToName.append(attempt)
                    break
                }
            }
        }
        guard looksToName.count == coldCount else { throw BenchError.setup("the other end was not named (\(looksToName.count) of \(coldCount))") }
        let inspector = CaptureProbe.waitInspector()
        _ = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector)
        var warm: [Double] = []
        let began = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count where DispatchTime.now().uptimeNanoseconds - began < 900_000_000 {
            guard let look = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector), look.endpoints == 1 else { continue }
            warm.append(Double(look.waitNanoseconds) / 1000)
        }
        let processes = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { Int($0) != nil }.count
        return Outcome(
            processes: processes, cold: cold, looksToName: looksToName, warm: warm, hostTCPSockets: Self.hostTCPSockets(),
            ownDescriptors: ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count)
    }

    /// A TCP listener on 127.0.0.1 (close-on-exec), on a port of the kernel's choice, and its address.
    static func loopbackListener(backlog: Int32) -> (descriptor: Int32, address: sockaddr_in)? {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, backlog) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            return nil
        }
        return (listener, address)
    }

    /// A TCP socket (inherited across exec) connected to `address`; -1 when it could not connect.
    static func connected(to address: sockaddr_in) -> Int32 {
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard client >= 0 else { return -1 }
        var address = address
        let done = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        if done { return client }
        close(client)
        return -1
    }

    /// `TCP: inuse N` of `/proc/net/sockstat` (0 when unreadable).
    static func hostTCPSockets() -> Int {
        let text = (try? String(contentsOfFile: "/proc/net/sockstat", encoding: .utf8)) ?? ""
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("TCP:") }) else { return 0 }
        let words = line.split(separator: " ")
        return words.firstIndex(of: "inuse").flatMap { $0 + 1 < words.count ? Int(words[$0 + 1]) : nil } ?? 0
    }

    /// A crowded host: `sockets` TCP sockets (loopback pairs) held by a `sleep` child, and
    /// `descriptors` more descriptors (`/dev/null`) in this process.
    final class Crowd {
        private var child: pid_t = 0
        private var own: [Int32] = []

        init(sockets: Int, descriptors: Int) throws {
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            let needed = rlim_t(sockets + descriptors + 1024)
            if limit.rlim_cur < needed {
                limit.rlim_cur = min(max(needed, limit.rlim_cur), limit.rlim_max)
                setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            }
            guard let (listener, address) = IOWaitLookFigure.loopbackListener(backlog: 4096) else {
                throw BenchError.setup("no listener for the crowd")
            }
            defer { close(listener) }
            // The pairs are made here without close-on-exec, inherited by the child, then closed here.
            var pairs: [Int32] = []
            for _ in 0..<(sockets / 2) {
                let client = IOWaitLookFigure.connected(to: address)
                let server = client >= 0 ? accept(listener, nil, nil) : -1
                guard client >= 0, server >= 0 else {
                    pairs.forEach { close($0) }
                    throw BenchError.setup("the crowd stopped at \(pairs.count) sockets (the descriptor limit?)")
                }
                pairs += [client, server]
            }
            let words = ["/bin/sleep", "300"]
            let argv = words.map { strdup($0) } + [nil]
            let spawned = posix_spawn(&child, "/bin/sleep", nil, nil, argv, environ)
            argv.forEach { free($0) }
            pairs.forEach { close($0) }
            guard spawned == 0 else { throw BenchError.setup("could not start the crowd's sleep") }
            for _ in 0..<descriptors {
                let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw BenchError.setup("the process's descriptors stopped at \(own.count)") }
                own.append(descriptor)
            }
        }

        func end() {
            own.forEach { close($0) }
            own = []
            guard child > 0 else { return }
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
            child = 0
        }
    }
}
