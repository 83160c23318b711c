#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// Writes command output to a file (atomically: a temporary file beside it, then a rename) or
/// standard output. A failure names the path and the fix.
package enum CommandOutput {
    package static func write(_ data: Data, to path: String?, option: String = "-o") throws {
        guard let path, path != "-" else {
            Terminal.write(Array(data), to: STDOUT_FILENO)
            return
        }
        let folder = PathText.parent(of: path)
        let temporary = (folder.isEmpty ? "." : folder) + "/.hangwatch-" + String(getpid()) + "-" + PathText.lastComponent(of: path)
        do throws(SystemCallError) {
            let fd = try SystemCall.check("open", path: path) { open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666) }
            var failure: SystemCallError?
            data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count, failure == nil {
                    switch SystemCall.result("write", path: path, { Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset) }) {
                    case .success(let written): offset += written
                    case .failure(let error): failure = error
                    }
                }
            }
            if case .failure(let error) = SystemCall.result("close", path: path, { close(fd) }), failure == nil { failure = error }
            if failure == nil, case .failure(let error) = SystemCall.result("rename", path: path, { rename(temporary, path) }) {
                failure = error
            }
            if let failure {
                unlink(temporary)
                throw failure
            }
        } catch {
            throw CommandFailure(message: ErrorText.cannot(.write, path, code: error.code, option: option), exitCode: Exit.badInput)
        }
    }
}
