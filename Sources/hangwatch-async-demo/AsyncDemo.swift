import Foundation
import HangWatch
import HangWatchReport

/// An `async` `@main` service whose MainActor work hangs once: what a modern Swift service looks
/// like with no run loop at all. HangWatch watches its main queue by pinging it.
///
///   hangwatch-async-demo --reports DIR
///
/// Exits 0 when exactly one report was written, 1 otherwise.
@main
struct AsyncDemo {
    @MainActor static var requestsServed = 0

    @inline(never)
    @MainActor static func rebuildSearchIndex(milliseconds: Int) {
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
        var value: UInt64 = 1
        while DispatchTime.now().uptimeNanoseconds < end { value = value &* 31 &+ 7 }
        if value == 42 { print("") }
    }

    static func main() async throws {
        let arguments = CommandLine.arguments
        guard let flag = arguments.firstIndex(of: "--reports"), flag + 1 < arguments.count else {
            FileHandle.standardError.write(Data("usage: hangwatch-async-demo --reports DIR\n".utf8))
            exit(2)
        }
        let directory = arguments[flag + 1]
        let monitor = try HangMonitor(
            configuration: .init(serviceName: "async-demo", threshold: .milliseconds(250), reportDirectory: directory))
        try monitor.startWatchingMainQueue()
        print("HangWatch async demo: watching the main queue (MainActor), threshold 250 ms")
        // Quick MainActor work: not hangs.
        for _ in 0..<20 {
            try await Task.sleep(nanoseconds: 20_000_000)
            await MainActor.run { requestsServed += 1 }
        }
        print("  MainActor work that takes 800 ms")
        await rebuildSearchIndex(milliseconds: 800)
        try await Task.sleep(nanoseconds: 1_000_000_000)
        monitor.stop()
        let reports = (try? ReportStore(directory: directory).list()) ?? []
        print("\(reports.count) hang report(s) in \(directory)")
        exit(reports.count == 1 ? 0 : 1)
    }
}
