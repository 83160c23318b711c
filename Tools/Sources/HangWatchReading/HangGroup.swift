#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchReport

/// Hangs that share a signature: the same culprit. The "what do I fix first" view. Or, grouped by
/// a label (`group(_:byLabel:)`), hangs of the same request route, tenant, ...; or by the service's
/// release (`groupByServiceVersion(_:)`); or by where the process ran, its pod, container,
/// namespace or node (`group(_:by:)`).
public struct HangGroup: Sendable, Equatable {
    /// The signature the members share; empty for a group by label.
    public var signature: String
    /// What the signature hashes (`names`: one group across builds; `addresses`: this build's);
    /// nil for a group by label.
    public var signatureKind: HangReport.SignatureKind?
    /// For a group by label: the label's key.
    public var labelKey: String?
    /// For a group by label: the value its members carry (nil: they do not carry the label).
    public var labelValue: String?
    /// Whether the group is by service version (`groupByServiceVersion(_:)`).
    public var byServiceVersion = false
    /// For a group by service version: the members' version (nil: their reports have none).
    public var serviceVersion: String?
    /// For a group by where the process ran: by what (nil: the group is not).
    public var workload: Workload?
    /// For a group by where the process ran: the members' pod (`NAMESPACE/NAME`), container (its id,
    /// else `NAMESPACE/POD/NAME`), namespace or node; nil: their reports do not say.
    public var workloadValue: String?
    /// Hangs in the group, repeats folded into reports included.
    public var count: Int
    public var totalMs: Double
    public var p50Ms: Double
    public var p95Ms: Double
    public var maxMs: Double
    public var firstSeen: Date
    public var lastSeen: Date
    public var services: [String]
    /// The report whose stack represents the group (the longest hang).
    public var representative: ReportSummary

    /// Groups `summaries` by signature, most total time first. A report's folded repeats count
    /// with what its file records of them: their number, total and longest duration, last start.
    public static func group(_ summaries: [ReportSummary]) -> [HangGroup] {
        groups(Dictionary(grouping: summaries, by: \.signature)).map { group in
            var group = group
            group.signatureKind = group.representative.signatureKind
            return group
        }.sorted(by: order)
    }

    /// Groups `summaries` by the value of their label `key` (hangs without it: one group, whose
    /// value is nil), most total time first.
    public static func group(_ summaries: [ReportSummary], byLabel key: String) -> [HangGroup] {
        group(summaries, byValue: { $0.labels[key] }) { group, value in
            group.labelKey = key
            group.labelValue = value
        }
    }

    /// Groups `summaries` by their service version (hangs of reports without one: one group, whose
    /// version is nil), most total time first.
    public static func groupByServiceVersion(_ summaries: [ReportSummary]) -> [HangGroup] {
        group(summaries, byValue: \.serviceVersion) { group, value in
            group.byServiceVersion = true
            group.serviceVersion = value
        }
    }

    /// Where a process ran, as `hangwatch top --by` groups by it (`WorkloadIdentity`).
    public enum Workload: String, Sendable, CaseIterable {
        /// `WorkloadIdentity.pod`: `NAMESPACE/NAME` (the name alone without a namespace).
        case pod
        /// `WorkloadIdentity.container`: the container's id, else its name in its pod.
        case container
        case namespace
        case node

        /// The value of `resource` this groups by, nil when the report does not say.
        public func value(of resource: WorkloadIdentity?) -> String? {
            switch self {
            case .pod: resource?.pod
            case .container: resource?.container
            case .namespace: resource?.namespaceName
            case .node: resource?.nodeName
            }
        }
    }

    /// Groups `summaries` by where their process ran (hangs of reports that do not say: one group,
    /// whose value is nil), most total time first.
    public static func group(_ summaries: [ReportSummary], by workload: Workload) -> [HangGroup] {
        group(summaries, byValue: { workload.value(of: $0.resource) }) { group, value in
            group.workload = workload
            group.workloadValue = value
        }
    }

    /// Groups by `value` (nil: one group of its own), `name`s each group with its value.
    private static func group(
        _ summaries: [ReportSummary], byValue value: (ReportSummary) -> String?, name: (inout HangGroup, String?) -> Void
    ) -> [HangGroup] {
        // (Keyed "=value", and "" for none: a value may itself be empty.)
        let byValue = Dictionary(grouping: summaries) { value($0).map { "=" + $0 } ?? "" }
        return groups(byValue).map { group in
            var group = group
            name(&group, group.signature.isEmpty ? nil : String(group.signature.dropFirst()))
            group.signature = ""
            return group
        }.sorted(by: order)
    }

    /// Most total time first; then by signature, then by label value, then by version, then by
    /// where the process ran.
    private static func order(_ a: HangGroup, _ b: HangGroup) -> Bool {
        (a.totalMs, b.signature, b.labelValue ?? "", b.serviceVersion ?? "", b.workloadValue ?? "")
            > (b.totalMs, a.signature, a.labelValue ?? "", a.serviceVersion ?? "", a.workloadValue ?? "")
    }

    private static func groups(_ byKey: [String: [ReportSummary]]) -> [HangGroup] {
        byKey.map { signature, members in
            var durations: [Double] = []
            var total = 0.0
            for member in members {
                durations.append(member.durationMs)
                total += member.durationMs
            }
            // Repeats are counted in their report; their individual durations are not kept.
            let folded = saturatingSum(members.map(\.repeats))
            let sorted = durations.sorted()
            func percentile(_ fraction: Double) -> Double {
                sorted[min(sorted.count - 1, Int((fraction * Double(sorted.count - 1)).rounded()))]
            }
            let representative = members.max { ($0.durationMs, $1.path) < ($1.durationMs, $0.path) }!
            return HangGroup(
                signature: signature, signatureKind: nil, labelKey: nil, labelValue: nil, count: saturatingSum([members.count, folded]),
                totalMs: finite(total + members.reduce(0.0) { $0 + $1.repeatsTotalMs }),
                p50Ms: percentile(0.5), p95Ms: percentile(0.95), maxMs: finite(members.map(\.maxMs).max() ?? 0),
                firstSeen: members.map(\.startedAt).min()!, lastSeen: members.map(\.lastSeen).max()!,
                services: Array(Set(members.map(\.service))).sorted(), representative: representative)
        }
    }

    /// `value`, held within what JSON can write (`hangwatch top --json`): durations from report
    /// files may be 1e308, and a few of them add up past it.
    static func finite(_ value: Double) -> Double {
        value.isNaN ? 0 : min(max(value, -.greatestFiniteMagnitude), .greatestFiniteMagnitude)
    }

    /// The sum, held at Int.max (or Int.min) instead of trapping: repeat counts come from report
    /// files, and two reports that say Int.max must not bring `hangwatch top` down.
    static func saturatingSum(_ values: [Int]) -> Int {
        values.reduce(0) { total, value in
            let (sum, overflow) = total.addingReportingOverflow(value)
            return overflow ? (value > 0 ? Int.max : Int.min) : sum
        }
    }
}
