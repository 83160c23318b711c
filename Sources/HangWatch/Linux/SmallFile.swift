import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads small files (proc files, configuration) with plain system calls and a size limit.
enum SmallFile {
    struct ReadError: Error, CustomStringConvertible {
        var path: String
        var code: Int32
        var description: String {
            code == EFBIG ? "\(path): file too large" : "\(path): \(String(cString: strerror(code)))"
        }
    }

    static func read(_ path: String, limit: Int = 64 << 10) throws -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw ReadError(path: path, code: errno) }
        defer { close(fd) }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ReadError(path: path, code: errno)
            }
            if count == 0 { break }
            data.append(contentsOf: chunk[0..<count])
            if data.count > limit { throw ReadError(path: path, code: EFBIG) }
        }
        return data
    }

    /// The file as text, or nil when it cannot be read.
    static func text(_ path: String, limit: Int = 64 << 10) -> String? {
        guard let data = try? read(path, limit: limit) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
