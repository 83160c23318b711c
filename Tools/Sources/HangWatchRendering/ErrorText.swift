#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// Errors in plain words for the person at the terminal: what could not be done, to which path,
/// why, and what to do about it. Every error a command lets go passes through here, so no
/// Foundation or decoder text (`The file “x” couldn’t be opened`, `Swift.DecodingError…`) and
/// no system-call name (`opendir(/x): …`) reaches the user.
package enum ErrorText {
    package enum Access {
        case read, write
    }

    /// `permission denied`, `no such file or directory`: the system's words, lower case.
    package static func reason(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }

    /// What to do about `code` when `access` to a path failed; nil when there is nothing to say.
    package static func fix(_ code: Int32, _ access: Access, option: String?) -> String? {
        switch (code, access) {
        case (EACCES, .read), (EPERM, .read):
            return "run as a user who can read it" + (option.map { ", or pass \($0)" } ?? "")
        case (EACCES, .write), (EPERM, .write), (EROFS, .write):
            return "choose a directory you can write to" + (option.map { " with \($0)" } ?? "")
        case (ENOENT, .read):
            return option.map { "check the path, or pass \($0)" }
        case (ENOENT, .write), (ENOTDIR, .write):
            return "create the directory first" + (option.map { ", or give another \($0)" } ?? "")
        case (ENOSPC, _), (EDQUOT, _):
            return "free some space"
        default:
            return nil
        }
    }

    /// `cannot read /x/y.json: permission denied (run as a user who can read it, or pass --dir)`.
    package static func cannot(_ access: Access, _ path: String, code: Int32, option: String? = nil) -> String {
        "cannot \(access == .read ? "read" : "write") \(path): \(reason(code))" + (fix(code, access, option: option).map { " (\($0))" } ?? "")
    }

    /// The message for an error a command let go.
    package static func message(for error: any Error) -> String {
        switch error {
        case let failure as CommandFailure:
            return failure.message
        case let read as ReportReadError:
            return message(for: read)
        case let store as ReportStoreError:
            return message(for: store)
        case let call as SystemCallError:
            return call.path.map { cannot(.read, $0, code: call.code) } ?? reason(call.code)
        case is EncodingError:
            return "cannot write the output: a report holds a value JSON cannot represent"
        case is DecodingError:
            return "not a valid hang report"
        case let error as CocoaError:
            // Foundation's file errors: its path and the system's reason, never its sentence.
            let path = error.filePath ?? error.url?.path ?? "a file"
            let code = (error.userInfo["NSUnderlyingError"] as? POSIXError)?.code.rawValue ?? EIO
            return cannot(error.code.rawValue >= CocoaError.fileWriteUnknown.rawValue ? .write : .read, path, code: code)
        default:
            // This package's errors describe themselves in plain words; anyone else's text is not
            // shown (on Linux every error converts to a string: Foundation's NSError bridging).
            let type = String(reflecting: Swift.type(of: error))
            return type.hasPrefix("HangWatch") ? "\(error)" : "an unexpected error (\(type)); please report it"
        }
    }

    package static func message(for error: ReportReadError) -> String {
        switch error {
        case .notFound(let path):
            return "no report \(path) (give latest, a report id, or the path of a report file)"
        case .unreadable(let path, let code, _):
            return cannot(.read, path, code: code)
        default:
            return error.description
        }
    }

    package static func message(for error: ReportStoreError) -> String {
        switch error {
        case .writeFailed(let path, let code, _):
            return cannot(.write, path, code: code)
        default:
            return error.description
        }
    }
}
