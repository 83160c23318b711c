import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A read that blocks until another thread writes: what both services' pipe routes wait in.
package enum PipeWait {
    /// Reads one byte from a pipe that another thread writes `milliseconds` later.
    @inline(never)
    package static func readByteWritten(after milliseconds: Int) throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw ServiceError("pipe: \(String(cString: strerror(errno)))") }
        defer {
            close(ends[0])
            close(ends[1])
        }
        let writer = ends[1]
        Thread.detachNewThread {
            usleep(UInt32(milliseconds) * 1000)
            var byte: UInt8 = 1
            _ = write(writer, &byte, 1)
        }
        var byte: UInt8 = 0
        while read(ends[0], &byte, 1) < 0 && errno == EINTR {}
    }

    /// Counts the reads done, so that a route's own function does something after its read (in a
    /// release build a last call would be a jump, and the function would leave no frame).
    package static let reads = ReadCount()

    package final class ReadCount: Sendable {
        private let count = Mutex(0)
        package func add() { count.withLock { $0 += 1 } }
    }
}
