import Foundation
import HangWatch

/// The cost of one blocked-thread walk (a thread blocked in `read` on a pipe, `depth` frames of
/// recursion above it), on the watchdog's side: the first walk (unwind rules derived from libunwind)
/// and then `count` walks with the rules cached, with and without the prologue method (the
/// frame-record search alone is what a function with dynamic stack allocation costs).
struct BlockedUnwindFigure {
    var depth = 44
    var count = 500

    struct Outcome {
        var frames: Int
        var coldMicroseconds: Double
        var prologue: [Double]
        var frameRecord: [Double]
    }

    func measure() throws -> Outcome {
        try CaptureProbe.install(signal: CaptureProbe.defaultSignal)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BenchError.setup("pipe failed") }
        defer {
            close(fds[0])
            close(fds[1])
        }
        let ready = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var target: CaptureProbe.Target?
        let readEnd = fds[0]
        let thread = Thread {
            target = CaptureProbe.attachCurrentThread(signal: CaptureProbe.defaultSignal)
            ready.signal()
            blockAtDepth(depth, fd: readEnd)
        }
        thread.stackSize = 1 << 20
        thread.start()
        ready.wait()
        guard let target else { throw BenchError.setup("no target") }
        var cold: (frames: Int, nanoseconds: Int64, framePointer: String?)?
        for _ in 0..<500 where cold == nil {
            usleep(2000)
            cold = CaptureProbe.timeBlockedWalk(target)
        }
        guard let cold else { throw BenchError.setup("the thread never blocked") }
        func walks() -> [Double] {
            (0..<count).compactMap { _ in CaptureProbe.timeBlockedWalk(target).map { Double($0.nanoseconds) / 1000 } }
        }
        let prologue = walks()
        CaptureProbe.useProloguesForBlockedThreads(false)
        let frameRecord = walks()
        CaptureProbe.useProloguesForBlockedThreads(true)
        var byte: UInt8 = 1
        _ = write(fds[1], &byte, 1)
        return Outcome(frames: cold.frames, coldMicroseconds: Double(cold.nanoseconds) / 1000, prologue: prologue, frameRecord: frameRecord)
    }
}

enum BenchError: Error, CustomStringConvertible {
    case setup(String)

    var description: String {
        switch self {
        case .setup(let reason): reason
        }
    }
}

@inline(never)
func blockAtDepth(_ depth: Int, fd: Int32) {
    if depth > 0 {
        blockAtDepth(depth - 1, fd: fd)
        blackHole(UInt64(depth))
        return
    }
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
        _ = read(fd, buffer.baseAddress, 1)
    }
}
