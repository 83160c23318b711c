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
struct IOWaitLookFigure {
    var count = 500
    var coldCount = 20

    struct Outcome {
        var processes: Int
        var cold: [Double]
        var warm: [Double]
    }

    func measure() throws -> Outcome {
        try CaptureProbe.install(signal: CaptureProbe.defaultSignal)
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
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) == 0 }
        }
        let server = accept(listener, nil, nil)
        guard bound, connected, server >= 0 else { throw BenchError.setup("no loopback connection") }
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
        var cold: [Double] = []
        for _ in 0..<coldCount {
            usleep(2000)
            let inspector = CaptureProbe.waitInspector()
            guard let look = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector), look.endpoints == 1 else { continue }
            guard look.holderProcess == child else {
                throw BenchError.setup("the other end was not found (\(look.holderProcess.map(String.init) ?? "none"))")
            }
            cold.append(Double(look.waitNanoseconds) / 1000)
        }
        let inspector = CaptureProbe.waitInspector()
        _ = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector)
        var warm: [Double] = []
        let began = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count where DispatchTime.now().uptimeNanoseconds - began < 900_000_000 {
            guard let look = CaptureProbe.timeWaitLook(tid: waiterTID, inspector: inspector), look.endpoints == 1 else { continue }
            warm.append(Double(look.waitNanoseconds) / 1000)
        }
        let processes = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { Int($0) != nil }.count
        return Outcome(processes: processes, cold: cold, warm: warm)
    }
}
