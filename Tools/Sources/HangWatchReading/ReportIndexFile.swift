#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchReport

/// The catalog's index as stored: one array per field (ten thousand summaries decode as a few
/// dozen arrays of numbers rather than ten thousand objects), and every string once in a table
/// (services, frames and signatures repeat across reports). Internal to `ReportCatalog`; a file
/// that does not add up is treated as no index at all.
struct ReportIndexFile: Codable {
    var version: Int
    var directory: String
    var strings: [String] = []

    // One element per file.
    var path: [Int] = []
    var size: [UInt64] = []
    var modified: [Int64] = []
    var inode: [UInt64] = []
    /// Why the file was skipped (a string), or -1.
    var problem: [Int] = []
    /// The row of the file's summary in the columns below, or -1.
    var row: [Int] = []

    // One element per summary. Optional strings are -1 when absent; a missing ratio is -1.
    var id: [Int] = []
    var service: [Int] = []
    var host: [Int] = []
    var pid: [Int32] = []
    var threadName: [Int] = []
    var startedAt: [Double] = []
    var durationMs: [Double] = []
    var thresholdMs: [Double] = []
    var outcome: [Int] = []
    var verdict: [Int] = []
    var onCpuRatio: [Double] = []
    var blockedIn: [Int] = []
    var signature: [Int] = []
    var topFrame: [Int] = []
    /// Summary i's stack is `stackFrames[stackStart[i]..<stackStart[i + 1]]` (the last runs to the end).
    var stackStart: [Int] = []
    var stackFrames: [Int] = []
    var repeats: [Int] = []
    var repeatsTotalMs: [Double] = []
    var repeatsMaxMs: [Double] = []
    var lastSeen: [Double] = []
    /// 0: by names, 1: by addresses (`ReportSummary.signatureKind`).
    var signatureKind: [Int] = []
    /// Summary i's labels are `labelKeys[labelStart[i]..<labelStart[i + 1]]` with the values at the
    /// same places (the last runs to the end).
    var labelStart: [Int] = []
    var labelKeys: [Int] = []
    var labelValues: [Int] = []
    /// The service's version (a string), or -1 (`ReportSummary.serviceVersion`).
    var serviceVersion: [Int] = []
    /// Where the process runs (`ReportSummary.resource`): one column per attribute, in
    /// `WorkloadIdentity.Attribute`'s order, each a string or -1.
    var resource: [[Int]] = WorkloadIdentity.Attribute.allCases.map { _ in [] }

    init(version: Int, directory: String, entries: [String: ReportCatalog.IndexEntry]) {
        self.version = version
        self.directory = directory
        var table: [String: Int] = [:]
        func intern(_ text: String) -> Int {
            if let known = table[text] { return known }
            strings.append(text)
            table[text] = strings.count - 1
            return strings.count - 1
        }
        func intern(_ text: String?) -> Int { text.map { intern($0) } ?? -1 }
        for (filePath, entry) in entries.sorted(by: { $0.key < $1.key }) {
            path.append(intern(filePath))
            size.append(entry.size)
            modified.append(entry.modified)
            inode.append(entry.inode)
            problem.append(intern(entry.problem))
            guard let summary = entry.summary else {
                row.append(-1)
                continue
            }
            row.append(id.count)
            id.append(intern(summary.id))
            service.append(intern(summary.service))
            host.append(intern(summary.host))
            pid.append(summary.pid)
            threadName.append(intern(summary.threadName))
            startedAt.append(summary.startedAt.timeIntervalSince1970)
            durationMs.append(summary.durationMs)
            thresholdMs.append(summary.thresholdMs)
            outcome.append(intern(summary.outcome.rawValue))
            verdict.append(intern(summary.verdict.rawValue))
            onCpuRatio.append(summary.onCpuRatio ?? -1)
            blockedIn.append(intern(summary.blockedIn))
            signature.append(intern(summary.signature))
            topFrame.append(intern(summary.topFrame))
            stackStart.append(stackFrames.count)
            stackFrames.append(contentsOf: summary.stack.map { intern($0) })
            repeats.append(summary.repeats)
            repeatsTotalMs.append(summary.repeatsTotalMs)
            repeatsMaxMs.append(summary.repeatsMaxMs)
            lastSeen.append(summary.lastSeen.timeIntervalSince1970)
            signatureKind.append(summary.signatureKind == .names ? 0 : 1)
            labelStart.append(labelKeys.count)
            for (key, value) in summary.labels.sorted(by: { $0.key < $1.key }) {
                labelKeys.append(intern(key))
                labelValues.append(intern(value))
            }
            serviceVersion.append(intern(summary.serviceVersion))
            for (column, attribute) in WorkloadIdentity.Attribute.allCases.enumerated() {
                resource[column].append(intern(summary.resource?[attribute]))
            }
        }
    }

    /// The entries by path; nil if the columns do not add up (a damaged or foreign file).
    func entries() -> [String: ReportCatalog.IndexEntry]? {
        let files = path.count
        let rows = id.count
        let fileColumns: [Int] = [size.count, modified.count, inode.count, problem.count, row.count]
        var summaryColumns: [Int] = [service.count, host.count, pid.count, threadName.count, startedAt.count]
        summaryColumns += [durationMs.count, thresholdMs.count, outcome.count, verdict.count, onCpuRatio.count]
        summaryColumns += [blockedIn.count, signature.count, topFrame.count, stackStart.count, repeats.count]
        summaryColumns += [repeatsTotalMs.count, repeatsMaxMs.count, lastSeen.count, signatureKind.count, labelStart.count]
        summaryColumns += [serviceVersion.count]
        summaryColumns += resource.map(\.count)
        guard resource.count == WorkloadIdentity.Attribute.allCases.count, fileColumns.allSatisfy({ $0 == files }), summaryColumns.allSatisfy({ $0 == rows }), labelKeys.count == labelValues.count
        else { return nil }
        func string(_ index: Int) -> String? { index >= 0 && index < strings.count ? strings[index] : nil }
        var result: [String: ReportCatalog.IndexEntry] = [:]
        result.reserveCapacity(files)
        for file in 0..<files {
            guard let filePath = string(path[file]) else { return nil }
            var entry = ReportCatalog.IndexEntry(size: size[file], modified: modified[file], inode: inode[file])
            entry.problem = string(problem[file])
            let index = row[file]
            if index >= 0 {
                guard index < rows, let summaryID = string(id[index]), let serviceName = string(service[index]),
                    let hostName = string(host[index]), let outcomeName = string(outcome[index]),
                    let outcomeValue = HangReport.Outcome(rawValue: outcomeName), let verdictName = string(verdict[index]),
                    let verdictValue = HangReport.Verdict(rawValue: verdictName), let signatureText = string(signature[index])
                else { return nil }
                let start = stackStart[index]
                let end = index + 1 < rows ? stackStart[index + 1] : stackFrames.count
                guard start >= 0, start <= end, end <= stackFrames.count else { return nil }
                var stack: [String] = []
                stack.reserveCapacity(end - start)
                for frame in stackFrames[start..<end] {
                    guard let name = string(frame) else { return nil }
                    stack.append(name)
                }
                let labelsFrom = labelStart[index]
                let labelsTo = index + 1 < rows ? labelStart[index + 1] : labelKeys.count
                guard labelsFrom >= 0, labelsFrom <= labelsTo, labelsTo <= labelKeys.count, (0...1).contains(signatureKind[index])
                else { return nil }
                var labels: [String: String] = [:]
                for position in labelsFrom..<labelsTo {
                    guard let key = string(labelKeys[position]), let value = string(labelValues[position]) else { return nil }
                    labels[key] = value
                }
                var identity = WorkloadIdentity()
                for (column, attribute) in WorkloadIdentity.Attribute.allCases.enumerated() {
                    identity[attribute] = string(resource[column][index])
                }
                entry.summary = ReportSummary(
                    path: filePath, id: summaryID, service: serviceName, host: hostName, pid: pid[index],
                    threadName: string(threadName[index]), startedAt: Date(timeIntervalSince1970: startedAt[index]),
                    durationMs: durationMs[index], thresholdMs: thresholdMs[index], outcome: outcomeValue, verdict: verdictValue,
                    onCpuRatio: onCpuRatio[index] < 0 ? nil : onCpuRatio[index], blockedIn: string(blockedIn[index]),
                    signature: signatureText, topFrame: string(topFrame[index]), stack: stack, repeats: repeats[index],
                    repeatsTotalMs: repeatsTotalMs[index], repeatsMaxMs: repeatsMaxMs[index],
                    lastSeen: Date(timeIntervalSince1970: lastSeen[index]), signatureKind: signatureKind[index] == 0 ? .names : .addresses,
                    labels: labels, serviceVersion: string(serviceVersion[index]), resource: identity.isEmpty ? nil : identity)
            } else if entry.problem == nil {
                return nil
            }
            result[filePath] = entry
        }
        return result
    }
}
