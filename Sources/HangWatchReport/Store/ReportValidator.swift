#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Checks a report file against the schema: it decodes (with the path of the first field that does
/// not), and its parts agree with each other (indices in range, times in order).
public struct ReportValidator: Sendable {
    public var reader: ReportReader

    public init(reader: ReportReader = ReportReader()) {
        self.reader = reader
    }

    /// The problems with the report at `path`; empty when it is valid.
    public func problems(path: String) -> [String] {
        let report: HangReport
        do {
            report = try reader.read(path: path)
        } catch {
            return ["\(error)"]
        }
        return problems(report)
    }

    /// The consistency problems of a decoded report.
    public func problems(_ report: HangReport) -> [String] {
        var problems: [String] = []
        func check(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition { problems.append(message()) }
        }
        check(!report.id.isEmpty, "id: empty")
        check(report.durationMs >= 0 && report.durationMs.isFinite, "durationMs: \(report.durationMs) is not a duration")
        check(report.thresholdMs > 0, "thresholdMs: \(report.thresholdMs) must be positive")
        check(report.startedAt <= report.detectedAt, "detectedAt: before startedAt")
        if let ended = report.endedAt {
            check(report.startedAt <= ended, "endedAt: before startedAt")
            check(report.outcome != .ongoing, "outcome: ongoing, but endedAt is set")
        }
        for (index, sample) in report.samples.enumerated() {
            if let stack = sample.stack {
                check(stack >= 0 && stack < report.stacks.count, "samples[\(index)].stack: \(stack) is not an index into stacks (\(report.stacks.count))")
            }
            check(sample.offsetMs >= 0 && sample.offsetMs.isFinite, "samples[\(index)].offsetMs: \(sample.offsetMs) is not a time")
        }
        for (index, stack) in report.stacks.enumerated() {
            for (position, frame) in stack.frames.enumerated() where frame < 0 || frame >= report.frames.count {
                problems.append("stacks[\(index)].frames[\(position)]: \(frame) is not an index into frames (\(report.frames.count))")
                break
            }
        }
        for (index, frame) in report.frames.enumerated() {
            if let image = frame.image {
                check(image >= 0 && image < report.images.count, "frames[\(index)].image: \(image) is not an index into images (\(report.images.count))")
            }
            check(Self.isHex(frame.address), "frames[\(index)].address: \"\(frame.address.prefix(40))\" is not a hexadecimal address")
        }
        for (index, thread) in (report.threads ?? []).enumerated() {
            if let stack = thread.stack {
                check(stack >= 0 && stack < report.stacks.count, "threads[\(index)].stack: \(stack) is not an index into stacks (\(report.stacks.count))")
            }
            check(thread.tid > 0, "threads[\(index)].tid: \(thread.tid) is not a thread id")
        }
        if let heaviest = report.heaviestStack {
            check(heaviest.stack >= 0 && heaviest.stack < report.stacks.count, "heaviestStack.stack: \(heaviest.stack) is not an index into stacks")
        }
        for (index, source) in (report.recent?.sources ?? []).enumerated() {
            if let lag = source.lag {
                check(lag.counts.count == lag.boundsMs.count + 1, "recent.sources[\(index)].lag: \(lag.counts.count) counts for \(lag.boundsMs.count) bounds")
            }
        }
        for (index, miss) in (report.before?.nearMisses ?? []).enumerated() {
            if let stack = miss.stack {
                check(stack >= 0 && stack < report.stacks.count, "before.nearMisses[\(index)].stack: \(stack) is not an index into stacks (\(report.stacks.count))")
            }
        }
        var waits = report.waitsFor.map { [("waitsFor", $0)] } ?? []
        waits += (report.threads ?? []).enumerated().compactMap { index, thread in thread.waitsFor.map { ("threads[\(index)].waitsFor", $0) } }
        for (place, wait) in waits {
            check(["held", "none", "unknown", "free"].contains(wait.owner), "\(place).owner: \"\(wait.owner.prefix(40))\" is not held, none, unknown or free")
            check(wait.owner != "held" || wait.holder != nil, "\(place): held, but no holder")
            let holders = [wait.holder] + (wait.chain ?? []).map(\.holder) + (wait.endpoints ?? []).flatMap { $0.peers ?? [] }.map { $0 }
            for holder in holders.compactMap({ $0 }) {
                if let stack = holder.stack {
                    check(stack >= 0 && stack < report.stacks.count, "\(place): a holder's stack \(stack) is not an index into stacks")
                }
                check(holder.tid != nil || holder.pid != nil, "\(place): a holder with neither tid nor pid")
            }
        }
        if let names = report.nameSignature {
            check(names.count == 16 && names.allSatisfy(\.isHexDigit), "nameSignature: \"\(names.prefix(40))\" is not 16 hexadecimal digits")
        }
        if let labels = report.labels {
            check(labels.count <= HangLabels.maxCount, "labels: \(labels.count) labels, more than \(HangLabels.maxCount)")
            for (key, value) in labels.sorted(by: { $0.key < $1.key }) {
                check(!key.isEmpty && key.utf8.count <= HangLabels.maxKeyBytes, "labels: key \"\(key.prefix(60))\" is empty or longer than \(HangLabels.maxKeyBytes) bytes")
                check(value.utf8.count <= HangLabels.maxValueBytes, "labels.\(key.prefix(40)): longer than \(HangLabels.maxValueBytes) bytes")
            }
        }
        return problems
    }

    static func isHex(_ text: String) -> Bool {
        text.hasPrefix("0x") && text.count > 2 && text.count <= 18 && text.dropFirst(2).allSatisfy(\.isHexDigit)
    }
}
