import Foundation
import HangWatchReport
import Testing

/// A real Hummingbird 2 server: one request's handler (`/restock`) holds an `NIOLock` for 800 ms,
/// another request's handler (`/stock`) waits for it on another pool thread. The waiting
/// request's report must say what it waits for and name the holder: the `/restock` handler's
/// thread, and its stack with the function that holds the lock (issue 35).
@Suite(.serialized) struct HummingbirdLockHolderTests {
    static let wrk = "/usr/bin/wrk"

    @Test func aRouteWaitingForAnotherRequestsNIOLockNamesThatHandlersThreadAndStack() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.wrk), "\(Self.wrk) is missing: apt-get install wrk")
        let server = try ShopServer()
        // Quick requests first: a pool thread is watched from the first attach job it runs
        // (docs/sources.md), so both pool threads have served before the slow requests.
        let warm = Process()
        warm.executableURL = URL(fileURLWithPath: Self.wrk)
        warm.arguments = ["-t1", "-c4", "-d1s", server.base + "/hello"]
        warm.standardOutput = FileHandle.nullDevice
        warm.standardError = FileHandle.nullDevice
        try warm.run()
        warm.waitUntilExit()

        // /restock takes the lock; once it holds it (the service says so), /stock asks for it.
        let restocked = Completion()
        Thread.detachNewThread { restocked.finish(Result { try server.get("/restock") }) }
        let deadline = Date().addingTimeInterval(10)
        while try server.get("/restock/held") != "yes\n" {
            try #require(Date() < deadline, "/restock never held the lock: \(server.log)")
            usleep(5_000)
        }
        let stock = try server.get("/stock")
        let restock = try restocked.wait()
        #expect(stock.hasPrefix("stock ") && restock.hasPrefix("stock "), "\(stock) \(restock)")
        #expect(server.stop() == 0, "\(server.log)")

        let all = try server.symbolicatedReports()
        func heaviest(_ report: HangReport) -> [String] {
            (report.heaviestStack?.frames ?? []).compactMap { frame in frame.symbol.map { FrameNamingProbe.short($0) } }
        }
        func names(_ stack: Int?, in report: HangReport) -> [String] {
            guard let stack, report.stacks.indices.contains(stack) else { return [] }
            return report.stacks[stack].frames.compactMap { index in
                report.frames.indices.contains(index) ? report.frames[index].symbol.map { FrameNamingProbe.short($0) } : nil
            }
        }
        // Each reported thread with its stack and wait: a pool-job report's thread, and each
        // thread of a starved-pool report (the pool has a thread per CPU: on 2 CPUs the two
        // requests hold both, and the pool watch reports the pool starved, with each thread's wait).
        struct Seen { var report: HangReport; var tid: Int32; var name: String?; var waits: HangReport.WaitsFor?; var stack: [String] }
        let threads = all.flatMap { report -> [Seen] in
            [Seen(report: report, tid: report.thread.tid, name: report.thread.name, waits: report.waitsFor, stack: heaviest(report))]
                + (report.threads ?? []).map { Seen(report: report, tid: $0.tid, name: $0.name, waits: $0.waitsFor, stack: names($0.stack, in: report)) }
        }
        let seen = threads.map { "\($0.report.source) \($0.tid): \($0.stack.prefix(6))" }
        // The /restock job's thread, asleep under the lock; the /stock job's, waiting for it.
        let holderJob = try #require(threads.first { $0.stack.contains("Inventory.recount(_:)") }, "no report of /restock: \(seen)\n\(server.log)")
        let waiters = threads.filter { $0.stack.contains("Inventory.readStock(measurements:)") }
        let waiter = try #require(waiters.first { $0.waits != nil } ?? waiters.first, "no report of /stock: \(seen)\n\(server.log)")
        #expect(waiter.tid != holderJob.tid)
        let waits = try #require(waiter.waits, "the /stock report (\(waiter.report.source)) says nothing of its wait: \(waiter.stack)")
        #expect(waits.kind == "mutex", "\(waits)")
        #expect(waits.owner == "held", "\(waits)")
        let holder = try #require(waits.holder)
        // The holder is the thread that ran /restock's handler, and its stack shows it holding.
        #expect(holder.tid == holderJob.tid, "holder \(holder.tid.map(String.init) ?? "-"), /restock ran on \(holderJob.tid)")
        #expect(holder.name == holderJob.name, "\(holder.name ?? "-") / \(holderJob.name ?? "-")")
        #expect(holder.verdict == "blocked", "\(holder)")
        let held = names(holder.stack, in: waiter.report)
        // The function that holds the lock, in the holder's stack, under the sleep it is in.
        let recount = try #require(held.firstIndex(of: "Inventory.recount(_:)"), "the holder's stack: \(held)")
        let sleeping = held.firstIndex { $0.contains("sleep") } ?? -1
        #expect(recount > sleeping, "\(held)")
        print("[hummingbird] /stock (\(waiter.report.source) report) waited for mutex \(waits.address ?? "-") held by thread \(holder.tid ?? 0) \"\(holder.name ?? "")\" (\(holder.verdict ?? "-")): \(held.prefix(6))")
    }
}

/// A result handed from one thread to another.
final class Completion: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<String, any Error>?

    func finish(_ result: Result<String, any Error>) {
        condition.lock()
        self.result = result
        condition.broadcast()
        condition.unlock()
    }

    func wait() throws -> String {
        condition.lock()
        defer { condition.unlock() }
        while result == nil { condition.wait() }
        return try result!.get()
    }
}
