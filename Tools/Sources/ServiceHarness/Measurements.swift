import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a route handler really spent blocking, as the handler itself measured it: one JSON line
/// per request (`{"route":…,"startedAt":…,"durationMs":…}`), appended to a file the test reads.
package final class Measurements: Sendable {
    private let descriptor: Int32?

    package init(path: String?) throws {
        guard let path else {
            descriptor = nil
            return
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ServiceError("cannot open \(path): \(String(cString: strerror(errno)))") }
        self.descriptor = descriptor
    }

    /// Runs `work`, then records how long it took under `route`.
    package func measure<T>(_ route: String, _ work: () throws -> T) rethrows -> T {
        let wall = Date()
        let start = DispatchTime.now().uptimeNanoseconds
        let result = try work()
        let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        if let descriptor {
            let line = "{\"route\":\"\(route)\",\"startedAt\":\(wall.timeIntervalSince1970),\"durationMs\":\(milliseconds)}\n"
            // One write per line on an O_APPEND file: lines from concurrent handlers never mix.
            _ = line.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
        }
        return result
    }
}

package struct ServiceError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
