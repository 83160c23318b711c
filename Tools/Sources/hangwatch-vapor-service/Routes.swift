#if Vapor
import Foundation
import ServiceHarness
import Vapor

/// What the synchronous routes block in, each its own way, on the event loop that runs them:
/// `read` on a pipe another thread writes later, a `pthread_mutex_lock` another thread holds, and
/// a one-line function around `usleep` (`push rbp; mov rbp, rsp; call usleep`). `@inline(never)`
/// keeps every function a frame of its own, so the report can name it.
enum Blocking {
    /// Reads one byte from a pipe that another thread writes `milliseconds` later.
    @inline(never)
    static func readReply(milliseconds: Int) throws {
        try PipeWait.readByteWritten(after: milliseconds)
        PipeWait.reads.add()
    }

    /// Waits for a pthread mutex that another thread holds for `milliseconds`.
    @inline(never)
    static func lockShelf(_ shelf: Shelf, milliseconds: Int) {
        let held = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            pthread_mutex_lock(shelf.mutex)
            held.signal()
            usleep(UInt32(milliseconds) * 1000)
            pthread_mutex_unlock(shelf.mutex)
        }
        held.wait()
        pthread_mutex_lock(shelf.mutex)
        pthread_mutex_unlock(shelf.mutex)
    }

    /// One line: a standard prologue with no fixed frame (`push rbp; mov rbp, rsp; call usleep;
    /// test eax, eax; ...`). Whether it slept all the way is its result (a call whose result is
    /// discarded would be a tail jump, and the wrapper no frame of its own).
    @inline(never)
    static func nap(microseconds: UInt32) -> Bool {
        usleep(microseconds) == 0
    }
}

/// A pthread mutex in memory that never moves, shared by the `/cart` requests.
final class Shelf: @unchecked Sendable {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
}

/// The route handlers. Each is a plain synchronous function the route closure calls, as a Vapor
/// service's controllers are; the report must name the blocking function, the handler, and their
/// callers up to Vapor's responder and NIO's event loop.
struct Store: Sendable {
    let measurements: Measurements
    let blockMilliseconds: Int
    let shelf = Shelf()

    @inline(never)
    func fetchCatalog(_ request: Request) throws -> String {
        try measurements.measure("/catalog") { try Blocking.readReply(milliseconds: blockMilliseconds) }
        return "catalog \(request.url.path)\n"
    }

    @inline(never)
    func updateCart(_ request: Request) -> String {
        measurements.measure("/cart") { Blocking.lockShelf(shelf, milliseconds: blockMilliseconds) }
        return "cart \(request.url.path)\n"
    }

    @inline(never)
    func throttle(_ request: Request) -> String {
        _ = measurements.measure("/throttle") { Blocking.nap(microseconds: UInt32(blockMilliseconds) * 1000) }
        return "throttle \(request.url.path)\n"
    }
}

/// The routes: synchronous closures, which Vapor 4 runs on the event loop of the request's
/// connection; `/hello` answers at once.
func routes(_ app: Application, store: Store, served: ServedCount) {
    app.get("hello") { _ in
        served.add()
        return "hello\n"
    }
    app.get("catalog") { request in try store.fetchCatalog(request) }
    app.get("cart") { request in store.updateCart(request) }
    app.get("throttle") { request in store.throttle(request) }
}
#endif
