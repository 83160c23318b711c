#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Reads small files (`/proc` files, configuration) with plain system calls and a size limit:
/// `/proc` says 0 for a file's size, so it is read to its end. The one reader of them for the
/// monitor, the agent and the CLI.
@_spi(Internal) public enum SmallFile {
    public struct ReadError: Error, CustomStringConvertible {
        public var path: String
        public var code: Int32
        public var description: String {
            code == EFBIG ? "\(path): file too large" : "\(path): \(SystemCallError(call: "read", path: path, code: code).reason)"
        }
    }

    public static func read(_ path: String, limit: Int = 64 << 10) throws -> Data {
        do {
            let fd = try SystemCall.check("open", path: path) { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
            defer { close(fd) }
            var data = Data()
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = try SystemCall.check("read", path: path) { chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
                if count == 0 { break }
                data.append(contentsOf: chunk[0..<count])
                if data.count > limit { throw ReadError(path: path, code: EFBIG) }
            }
            return data
        } catch let error as SystemCallError {
            throw ReadError(path: path, code: error.code)
        }
    }

    /// The file as text, or nil when it cannot be read.
    public static func text(_ path: String, limit: Int = 64 << 10) -> String? {
        guard let data = try? read(path, limit: limit) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Where a symbolic link points (`readlink`), nil when it cannot be read.
    public static func link(_ path: String) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 4096) { buffer -> String? in
            let count = readlink(path, buffer.baseAddress!, buffer.count)
            guard count > 0 else { return nil }
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress, count: count), as: UTF8.self)
        }
    }
}
