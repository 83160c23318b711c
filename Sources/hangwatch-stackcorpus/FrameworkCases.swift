import CStackCorpus
import Dispatch
import Foundation
import HangWatch
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

// Cases shaped like real frameworks' code: a one-line wrapper around `usleep` (a prologue with no
// fixed frame), a `DispatchSemaphore` wait with a timeout (the Dispatch overlay's wrapper has no
// call-frame information), and a SwiftNIO event loop's thread blocked inside a channel handler and
// inside a route closure called the way Vapor 4 calls a synchronous route (a responder's stored
// closure, from a future's callback). NIO is built as a service builds it: its functions may be
// merged, its closures called indirectly, its generic code reached through thunks.

// MARK: a one-line wrapper around usleep

/// `push rbp; mov rbp, rsp; call usleep; ...`: a standard prologue with no fixed frame.
@inline(never) func napOnce() { noteEINTR(Int(usleep(200_000))) }
@inline(never) func napLoop() {
    corpus_keep(churn(201))
    markEntered()
    while !released.load(ordering: .relaxed) { napOnce() }
    corpus_keep(202)
}
@inline(never) func napOuter() { corpus_keep(churn(203)); napLoop(); corpus_keep(203) }

/// Wrappers like it, in a block the main queue runs (drained by the run loop) and in a block the
/// run loop performs: the callers between the loop and the handler are Dispatch's and Foundation's.
/// (Each case has a function of its own innermost: a service's reports are told apart by it.)
@inline(never) func napInQueueBlock() -> Bool { usleep(200_000) == 0 }
@inline(never) func napInPerformedBlock() -> Bool { usleep(200_000) == 0 }
@inline(never) func mainQueueNap() {
    corpus_keep(churn(207))
    markEntered()
    while !released.load(ordering: .relaxed) { corpus_keep(napInQueueBlock() ? 1 : 0) }
    corpus_keep(207)
}
@inline(never) func performedNap() {
    corpus_keep(churn(208))
    markEntered()
    while !released.load(ordering: .relaxed) { corpus_keep(napInPerformedBlock() ? 1 : 0) }
    corpus_keep(208)
}

/// The wrapper as a closure called through a function pointer (a stored handler): its caller's
/// call is indirect, so only the prologue can place its frame record.
nonisolated(unsafe) var storedNap: @Sendable () -> Void = {}
/// Stored at run time (the optimizer cannot call it directly): `push rbp; mov rbp, rsp; call
/// usleep; ...; pop rbp; jmp corpus_keep`.
let napClosures: [@Sendable () -> Void] = [{ corpus_keep(usleep(200_000)) }, { corpus_keep(usleep(150_000)) }]
@inline(never) func storedNapLoop() {
    corpus_keep(churn(209))
    markEntered()
    while !released.load(ordering: .relaxed) { storedNap() }
    corpus_keep(210)
}
@inline(never) func storedNapOuter() { corpus_keep(churn(225)); storedNapLoop(); corpus_keep(225) }

// MARK: DispatchSemaphore.wait(timeout:)

@inline(never) func timedSemaphoreInner(_ semaphore: DispatchSemaphore) {
    corpus_keep(churn(204))
    markEntered()
    while semaphore.wait(timeout: .now() + .seconds(30)) == .timedOut {}
    corpus_keep(205)
}
@inline(never) func timedSemaphoreOuter(_ semaphore: DispatchSemaphore) { corpus_keep(churn(206)); timedSemaphoreInner(semaphore); corpus_keep(206) }

// MARK: DispatchQueue.sync (the overlay's closures for the generic one have no call-frame information)

let corpusQueue = DispatchQueue(label: "hangwatch.corpus.sync")

@inline(never) func syncReadOuter(_ fd: Int32) { corpus_keep(churn(221)); syncReadMiddle(fd); corpus_keep(221) }
@inline(never) func syncReadMiddle(_ fd: Int32) {
    corpus_keep(churn(222))
    corpusQueue.sync { readInQueue(fd) }
    corpus_keep(222)
}
@inline(never) func readInQueue(_ fd: Int32) { corpus_keep(churn(226)); handlerBlockingRead(fd); corpus_keep(226) }
@inline(never) func valueReadInQueue(_ fd: Int32) { corpus_keep(churn(227)); handlerBlockingRead(fd); corpus_keep(227) }

@inline(never) func syncValueOuter(_ fd: Int32) { corpus_keep(churn(223)); corpus_keep(syncValueMiddle(fd)); corpus_keep(223) }
@inline(never) func syncValueMiddle(_ fd: Int32) -> Int32 {
    corpus_keep(churn(224))
    let value = corpusQueue.sync { () -> Int32 in
        valueReadInQueue(fd)
        return 224
    }
    return value
}

// MARK: a SwiftNIO event loop

/// The corpus's event loop: one thread of a `MultiThreadedEventLoopGroup`, attached for captures
/// (the controller samples it instead of the main thread for the cases that run there).
final class CorpusEventLoop: Sendable {
    static let shared = CorpusEventLoop()

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let target: CaptureProbe.Target

    private init() {
        let signal = CaptureProbe.defaultSignal
        target = try! group.next().submit { CaptureProbe.attachCurrentThread(signal: signal) }.wait()
    }

    /// A channel on the loop reading `input` (NIO takes it over), with `handler` in its pipeline,
    /// behind NIO's HTTP/1 request decoder with `http`.
    func channel(reading input: Int32, http: Bool, handler: @escaping @Sendable () -> any ChannelHandler) throws -> any Channel {
        try NIOPipeBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if http {
                        try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
                    }
                    try pipeline.addHandler(handler())
                }
            }
            .takingOwnershipOfDescriptor(input: input).wait()
    }
}

/// A request as a route sees it.
struct CorpusRequest: Sendable {
    var bytes: Int
    var eventLoop: any EventLoop
}

/// Vapor's `BasicResponder` in miniature: a stored closure called from a future's callback.
struct CorpusResponder: Sendable {
    let closure: @Sendable (CorpusRequest) throws -> EventLoopFuture<String>

    @inline(never) func respond(to request: CorpusRequest) -> EventLoopFuture<String> {
        do {
            return try closure(request)
        } catch {
            return request.eventLoop.makeFailedFuture(error)
        }
    }
}

/// A server's handler: each read becomes a request, answered by the responder (after the body is
/// "collected": a future that is already complete, so its callback runs at once, as Vapor's does
/// for a request without a body).
final class CorpusServerHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let responder: CorpusResponder

    init(responder: CorpusResponder) {
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let request = CorpusRequest(bytes: unwrapInboundIn(data).readableBytes, eventLoop: context.eventLoop)
        let responder = self.responder
        let response = context.eventLoop.makeSucceededVoidFuture().flatMap { responder.respond(to: request) }
        response.whenComplete { _ in finished.signal() }
    }
}

/// The synchronous route closure of a Vapor-style route, as `app.get { req in ... }` makes it.
func route(_ body: @escaping @Sendable (CorpusRequest) throws -> String) -> CorpusResponder {
    CorpusResponder { request in request.eventLoop.makeSucceededFuture(try body(request)) }
}

/// An HTTP server's handler behind NIO's HTTP/1 decoder, as Vapor's is: the route runs when the
/// request's end is decoded, inside the parser's callback (llhttp's C code calls back into Swift,
/// and its `on_message_complete` reaches the callback through a tail call by function pointer).
final class CorpusHTTPHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    let responder: CorpusResponder

    init(responder: CorpusResponder) {
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let request = CorpusRequest(bytes: 0, eventLoop: context.eventLoop)
        let responder = self.responder
        let response = context.eventLoop.makeSucceededVoidFuture().flatMap { responder.respond(to: request) }
        response.whenComplete { _ in finished.signal() }
    }
}

/// A channel handler that does the blocking itself (no responder).
final class CorpusBlockingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let fd: Int32

    init(fd: Int32) {
        self.fd = fd
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        handlerReadsBody(fd)
        corpus_keep(Int32(unwrapInboundIn(data).readableBytes))
        finished.signal()
    }
}

@inline(never) func handlerReadsBody(_ fd: Int32) { corpus_keep(churn(211)); handlerBlockingRead(fd); corpus_keep(211) }
@inline(never) func handlerBlockingRead(_ fd: Int32) {
    corpus_keep(churn(212))
    markEntered()
    var byte: UInt8 = 0
    withStackBuffer { scratch in
        while !released.load(ordering: .relaxed) {
            noteEINTR(Int(read(fd, &byte, 1)))
        }
        scratch[0] = 1
    }
    corpus_keep(213)
}

@inline(never) func routeLocksCart(_ sync: PthreadSync) -> String { corpus_keep(churn(214)); routeCartMutex(sync); return "cart" }
@inline(never) func routeCartMutex(_ sync: PthreadSync) {
    corpus_keep(churn(215))
    markEntered()
    pthread_mutex_lock(sync.mutex)
    pthread_mutex_unlock(sync.mutex)
    corpus_keep(216)
}

@inline(never) func routeNaps() -> String { corpus_keep(churn(217)); napLoopOnLoop(); return "nap" }
@inline(never) func napLoopOnLoop() {
    corpus_keep(churn(218))
    markEntered()
    while !released.load(ordering: .relaxed) { napOnce() }
    corpus_keep(219)
}

@inline(never) func routeReadsUpstream(_ fd: Int32) -> String { corpus_keep(churn(220)); handlerBlockingRead(fd); return "upstream" }

/// Starts a loop case: a channel on the loop reads `trigger`, whose bytes (written by the main
/// thread's `block`: one, or an HTTP request with `http`) make `handler` run on the loop; the
/// handler signals `finished` itself.
func loopRun(
    http: Bool = false, handler: @escaping @Sendable () -> any ChannelHandler, release: @escaping @Sendable () -> Void
) throws -> Run {
    let trigger = try Pipe()
    let channel = try CorpusEventLoop.shared.channel(reading: dup(trigger.readEnd), http: http, handler: handler)
    return Run(
        block: {
            guard http else { return trigger.wake() }
            let request = Array("GET /cart HTTP/1.1\r\nHost: corpus\r\n\r\n".utf8)
            _ = write(trigger.writeEnd, request, request.count)
        },
        release: {
            release()
            channel.close(promise: nil)
        }, completesItself: true)
}

let frameworkCases: [CorpusCase] = [
    CorpusCase(name: "usleep-one-line-wrapper", chain: ["napOnce", "napLoop", "napOuter"]) {
        Run(block: { napOuter() }, release: {})
    },
    CorpusCase(name: "usleep-in-stored-closure", chain: ["napClosures", "storedNapLoop", "storedNapOuter"]) {
        storedNap = napClosures[Int(getpid()) & 1]
        return Run(block: { storedNapOuter() }, release: {})
    },
    CorpusCase(name: "usleep-in-main-queue-block", chain: ["napInQueueBlock", "mainQueueNap"]) {
        Run(
            block: {
                DispatchQueue.main.async {
                    mainQueueNap()
                    finished.signal()
                }
            }, release: {}, completesItself: true)
    },
    CorpusCase(name: "usleep-in-run-loop-perform", chain: ["napInPerformedBlock", "performedNap"]) {
        Run(
            block: {
                RunLoop.main.perform {
                    performedNap()
                    finished.signal()
                }
            }, release: {}, completesItself: true)
    },
    CorpusCase(name: "read-in-dispatch-sync", chain: ["readInQueue", "syncReadMiddle", "syncReadOuter"]) {
        let pipe = try Pipe()
        return Run(block: { syncReadOuter(pipe.readEnd) }, release: { pipe.wake() })
    },
    CorpusCase(name: "read-in-dispatch-sync-value", chain: ["valueReadInQueue", "syncValueMiddle", "syncValueOuter"]) {
        let pipe = try Pipe()
        return Run(block: { syncValueOuter(pipe.readEnd) }, release: { pipe.wake() })
    },
    CorpusCase(name: "dispatch-semaphore-timeout", chain: ["DispatchSemaphore.wait", "timedSemaphoreInner", "timedSemaphoreOuter"]) {
        let semaphore = DispatchSemaphore(value: 0)
        return Run(block: { timedSemaphoreOuter(semaphore) }, release: { semaphore.signal() })
    },
    CorpusCase(name: "nio-channel-handler-read", onEventLoop: true, chain: ["handlerBlockingRead", "handlerReadsBody", "CorpusBlockingHandler", "ChannelPipeline", "SelectableEventLoop.run"]) {
        let body = try Pipe()
        return try loopRun(handler: { CorpusBlockingHandler(fd: body.readEnd) }, release: { body.wake() })
    },
    CorpusCase(name: "nio-route-read", onEventLoop: true, chain: ["handlerBlockingRead", "routeReadsUpstream", "closure", "CorpusResponder.respond", "CorpusServerHandler", "SelectableEventLoop.run"]) {
        let upstream = try Pipe()
        let responder = route { _ in routeReadsUpstream(upstream.readEnd) }
        return try loopRun(handler: { CorpusServerHandler(responder: responder) }, release: { upstream.wake() })
    },
    CorpusCase(name: "nio-route-mutex", onEventLoop: true, chain: ["routeCartMutex", "routeLocksCart", "closure", "CorpusResponder.respond", "CorpusServerHandler", "SelectableEventLoop.run"]) {
        let sync = PthreadSync()
        pthread_mutex_lock(sync.mutex)
        let responder = route { _ in routeLocksCart(sync) }
        return try loopRun(handler: { CorpusServerHandler(responder: responder) }, release: { pthread_mutex_unlock(sync.mutex) })
    },
    CorpusCase(name: "nio-http-route-mutex", onEventLoop: true, chain: ["routeCartMutex", "routeLocksCart", "closure", "CorpusResponder.respond", "CorpusHTTPHandler", "llhttp", "SelectableEventLoop.run"]) {
        let sync = PthreadSync()
        pthread_mutex_lock(sync.mutex)
        let responder = route { _ in routeLocksCart(sync) }
        return try loopRun(http: true, handler: { CorpusHTTPHandler(responder: responder) }, release: { pthread_mutex_unlock(sync.mutex) })
    },
    CorpusCase(name: "nio-http-route-read", onEventLoop: true, chain: ["handlerBlockingRead", "routeReadsUpstream", "closure", "CorpusResponder.respond", "CorpusHTTPHandler", "llhttp", "SelectableEventLoop.run"]) {
        let upstream = try Pipe()
        let responder = route { _ in routeReadsUpstream(upstream.readEnd) }
        return try loopRun(http: true, handler: { CorpusHTTPHandler(responder: responder) }, release: { upstream.wake() })
    },
    CorpusCase(name: "nio-http-route-usleep", onEventLoop: true, chain: ["napOnce", "napLoopOnLoop", "routeNaps", "closure", "CorpusResponder.respond", "CorpusHTTPHandler", "llhttp", "SelectableEventLoop.run"]) {
        let responder = route { _ in routeNaps() }
        return try loopRun(http: true, handler: { CorpusHTTPHandler(responder: responder) }, release: {})
    },
    CorpusCase(name: "nio-route-usleep", onEventLoop: true, chain: ["napOnce", "napLoopOnLoop", "routeNaps", "closure", "CorpusResponder.respond", "CorpusServerHandler", "SelectableEventLoop.run"]) {
        let responder = route { _ in routeNaps() }
        return try loopRun(handler: { CorpusServerHandler(responder: responder) }, release: {})
    },
]
