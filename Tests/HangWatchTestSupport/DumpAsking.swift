import Foundation
import HangWatchReport
import HangWatchSymbolication

#if canImport(Glibc)
import Glibc
#endif

/// Asks a monitored process for a dump as `hangwatch dump` does (the tools' CLI is not built with
/// the library's tests): the capture signal its heartbeat names, queued to the process with the
/// dump tag and a nonce (bit 47 set for the tasks, bit 46 for the recent windows), then the answer
/// read from its report directory, removed, and symbolicated.
public enum DumpAsking {
    public enum Answer {
        case dump(HangReport)
        case refused(String)
    }

    /// The answer of process `pid`, whose monitor writes to `directory`, within `timeout` seconds.
    public static func ask(pid: Int32, directory: String, tasks: Bool, recent: Bool = false, timeout: Double = 60) throws -> Answer {
        let heartbeat = try MonitorHeartbeat.read(path: directory + "/" + MonitorHeartbeat.fileName(pid: pid))
        let random = UInt64.random(in: 1..<(1 << 46))
        let nonce = tasks ? random | 1 << 47 : recent ? random | 1 << 46 : random
        let value = UInt64(0x4844) << 48 | nonce
        guard sigqueue(pid, Int32(heartbeat.captureSignal), sigval(sival_ptr: UnsafeMutableRawPointer(bitPattern: UInt(value)))) == 0 else {
            throw Failure(message: "sigqueue to \(pid) failed")
        }
        let answer = directory + "/.dump-\(nonce).json"
        let refusal = directory + "/.dump-\(nonce).refused"
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let data = FileManager.default.contents(atPath: answer) {
                try? FileManager.default.removeItem(atPath: answer)
                var report = try HangReport.decode(data)
                ReportDirectory.symbolicator.symbolicate(&report)
                return .dump(report)
            }
            if let data = FileManager.default.contents(atPath: refusal) {
                try? FileManager.default.removeItem(atPath: refusal)
                return .refused(String(decoding: data, as: UTF8.self))
            }
            usleep(20_000)
        }
        throw Failure(message: "process \(pid) did not answer within \(timeout) s")
    }

    /// The dump, or a failure saying why there is none.
    public static func dump(pid: Int32, directory: String, tasks: Bool, recent: Bool = false, timeout: Double = 60) throws -> HangReport {
        switch try ask(pid: pid, directory: directory, tasks: tasks, recent: recent, timeout: timeout) {
        case .dump(let report): return report
        case .refused(let reason): throw Failure(message: "refused: \(reason)")
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}
