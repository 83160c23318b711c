import Foundation
import NIOConcurrencyHelpers
import NIOCore
import ServiceHarness
import Synchronization

/// The work the routes do. Each kind blocks the thread that runs it in its own way: spinning on a
/// CPU, waiting in `read`, in `nanosleep`, on a lock another thread holds. `@inline(never)` keeps
/// every function a frame of its own, so the report can name it.
enum Work {
    @inline(never)
    static func spin(milliseconds: Int) -> UInt64 {
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
        var value: UInt64 = 1
        while DispatchTime.now().uptimeNanoseconds < end { value = value &* 31 &+ 7 }
        return value
    }

    /// Reads one byte from a pipe that another thread writes `milliseconds` later.
    @inline(never)
    static func readPipe(milliseconds: Int) throws {
        try PipeWait.readByteWritten(after: milliseconds)
        PipeWait.reads.add()
    }

    /// Connects to 127.0.0.1:`port`, sends a line and reads the answer (to its end of line or the
    /// connection's), blocking the calling thread until the upstream answers.
    @inline(never)
    static func askUpstream(port: Int) throws -> String {
        let connection = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard connection >= 0 else { throw ServiceError("socket: \(String(cString: strerror(errno)))") }
        defer { close(connection) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(connection, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ServiceError("connect to the upstream: \(String(cString: strerror(errno)))") }
        let request = Array("figures\n".utf8)
        guard request.withUnsafeBytes({ write(connection, $0.baseAddress, $0.count) }) == request.count else {
            throw ServiceError("write to the upstream: \(String(cString: strerror(errno)))")
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while !answer.contains(UInt8(ascii: "\n")) {
            let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            answer += buffer[..<count]
        }
        return String(decoding: answer, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @inline(never)
    static func sleep(milliseconds: Int) {
        usleep(UInt32(milliseconds) * 1000)
    }

    /// Waits for a lock that another thread holds for `milliseconds`.
    @inline(never)
    static func waitForLock(milliseconds: Int) {
        let lock = NSLock()
        let held = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            lock.lock()
            held.signal()
            usleep(UInt32(milliseconds) * 1000)
            lock.unlock()
        }
        held.wait()
        lock.lock()
        lock.unlock()
    }
}

/// The route handlers: an async caller (the handler) awaits an async step, which blocks. The
/// reports must name the blocking function and, as async callers, the step and the handler.
enum Shop {
    static let blockMilliseconds = 300

    @inline(never)
    static func quote(measurements: Measurements) async -> String {
        await Task.yield()
        return await priceBasket(measurements: measurements)
    }

    @inline(never)
    static func priceBasket(measurements: Measurements) async -> String {
        await Task.yield()
        let value = measurements.measure("/quote") { Work.spin(milliseconds: blockMilliseconds) }
        return "quote \(value % 1000)\n"
    }

    @inline(never)
    static func downloadInvoice(measurements: Measurements) async throws -> String {
        await Task.yield()
        return try await fetchInvoiceBytes(measurements: measurements)
    }

    @inline(never)
    static func fetchInvoiceBytes(measurements: Measurements) async throws -> String {
        await Task.yield()
        try measurements.measure("/invoice") { try Work.readPipe(milliseconds: blockMilliseconds) }
        return "invoice\n"
    }

    @inline(never)
    static func checkout(measurements: Measurements) async -> String {
        await Task.yield()
        return await reserveStock(measurements: measurements)
    }

    @inline(never)
    static func reserveStock(measurements: Measurements) async -> String {
        await Task.yield()
        measurements.measure("/checkout") { Work.sleep(milliseconds: blockMilliseconds) }
        return "checkout\n"
    }

    @inline(never)
    static func updateCart(measurements: Measurements) async -> String {
        await Task.yield()
        return await lockCart(measurements: measurements)
    }

    @inline(never)
    static func lockCart(measurements: Measurements) async -> String {
        await Task.yield()
        measurements.measure("/cart") { Work.waitForLock(milliseconds: blockMilliseconds) }
        return "cart\n"
    }

    /// Asks the upstream service (`--upstream-port`) for the day's figures, synchronously, on the
    /// pool thread that runs the handler (what a blocking database or HTTP client does).
    @inline(never)
    static func salesReport(upstreamPort: Int?, measurements: Measurements) async throws -> String {
        await Task.yield()
        guard let upstreamPort else { throw ServiceError("/report needs --upstream-port") }
        let figures = try measurements.measure("/report") { try Work.askUpstream(port: upstreamPort) }
        return "report \(figures)\n"
    }

    /// A synchronous step run on an event loop of the server's group (what a channel handler or
    /// an `EventLoopFuture` callback does): it blocks every connection of that loop.
    @inline(never)
    static func renderReceipt(on loop: any EventLoop, measurements: Measurements) async throws -> String {
        try await loop.submit { formatReceiptOnLoop(measurements: measurements) }.get()
    }

    @inline(never)
    static func formatReceiptOnLoop(measurements: Measurements) -> String {
        measurements.measure("/receipt") { Work.sleep(milliseconds: blockMilliseconds) }
        return "receipt\n"
    }
}

/// Work the MainActor does (the main queue: in this `async` `@main`, a libdispatch worker drains
/// it). `/layout` lays out a page there and blocks the MainActor in a nested `usleep` for 400 ms:
/// every other MainActor job of the process waits meanwhile.
enum Storefront {
    static let layoutMilliseconds = 400

    @inline(never)
    @MainActor static func layoutPage(measurements: Measurements) -> String {
        measurements.measure("/layout") { rasterizeBanner() }
        return "layout\n"
    }

    /// Banners drawn (so that `rasterizeBanner` does something after its sleep: in a release build
    /// a last call would be a jump, and the function would leave no frame).
    @MainActor static var bannersDrawn = 0

    @inline(never)
    @MainActor static func rasterizeBanner() {
        Work.sleep(milliseconds: layoutMilliseconds)
        bannersDrawn += 1
    }
}

/// The shop's stock count, behind one `NIOLock` (an `NIOLockedValueBox`) that two routes share:
/// `/restock` holds it while it recounts (asleep, `recountMilliseconds`), `/stock` reads under it,
/// so a `/stock` request that comes meanwhile waits for the other request's handler: a hang whose
/// report must name the `/restock` handler's thread and stack as the holder (issue 35).
/// `/restock/held` answers `yes` while a recount holds the lock (the test's cue, no sleep).
enum Inventory {
    static let recountMilliseconds = 800
    static let stock = NIOLockedValueBox(100)
    static let recounting = Atomic<Bool>(false)

    @inline(never)
    static func restock(measurements: Measurements) async -> String {
        await Task.yield()
        let count = measurements.measure("/restock") { stock.withLockedValue { recount(&$0) } }
        return "stock \(count)\n"
    }

    /// Holds the lock (its caller's closure does) while it sleeps.
    @inline(never)
    static func recount(_ count: inout Int) -> Int {
        recounting.store(true, ordering: .releasing)
        defer { recounting.store(false, ordering: .releasing) }
        Work.sleep(milliseconds: recountMilliseconds)
        count += 1
        return count
    }

    @inline(never)
    static func readStock(measurements: Measurements) async -> String {
        await Task.yield()
        let count = measurements.measure("/stock") { stock.withLockedValue { $0 } }
        return "stock \(count)\n"
    }
}

/// Long polls (issue 61): `GET /orders/:id/wait` parks its handler's task on a continuation until
/// `GET /orders/release` answers them all; `GET /orders/waiting` says how many are parked. A service
/// whose requests all wait on something shows no thread to blame: `hangwatch dump --tasks` shows
/// each request's task, its chain to the handler and its `route` label.
enum Orders {
    static let waiting = Mutex<[CheckedContinuation<String, Never>]>([])

    @inline(never)
    static func waitForShipment(order: String) async -> String {
        await Task.yield()
        return await awaitCarrier(order: order)
    }

    @inline(never)
    static func awaitCarrier(order: String) async -> String {
        await withCheckedContinuation { continuation in waiting.withLock { $0.append(continuation) } }
    }

    /// Answers every parked request; how many there were.
    static func release() -> Int {
        let parked = waiting.withLock { list -> [CheckedContinuation<String, Never>] in
            defer { list = [] }
            return list
        }
        for continuation in parked { continuation.resume(returning: "shipped\n") }
        return parked.count
    }
}
