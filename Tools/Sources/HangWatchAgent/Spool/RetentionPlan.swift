import Foundation

/// Which reports to delete, systemd-coredump style, across every service at once: reports past the
/// maximum age; then per service, the oldest beyond the per-service count; then, oldest first over
/// all services, until the spool fits `maxUse` and the file system has `keepFree` bytes free.
/// Protected reports (a hang still going on in a live process) are never chosen.
struct RetentionPlan: Sendable {
    struct Limits: Sendable, Equatable {
        var maxUse: UInt64
        var keepFree: UInt64
        /// Zero: no age limit.
        var maxAge: Duration
        var maxPerService: Int

        init(maxUse: UInt64, keepFree: UInt64, maxAge: Duration, maxPerService: Int) {
            self.maxUse = maxUse
            self.keepFree = keepFree
            self.maxAge = maxAge
            self.maxPerService = maxPerService
        }

        init(_ configuration: AgentConfiguration) {
            self.init(
                maxUse: configuration.maxUse, keepFree: configuration.keepFree, maxAge: configuration.maxAge,
                maxPerService: configuration.maxReportsPerService)
        }
    }

    struct Candidate: Sendable {
        var file: Spool.File
        /// When the hang started (the order of deletion: oldest first).
        var startedAt: Date
        var isProtected: Bool

        init(file: Spool.File, startedAt: Date, isProtected: Bool) {
            self.file = file
            self.startedAt = startedAt
            self.isProtected = isProtected
        }
    }

    enum Reason: String, Sendable {
        case age = "older than the maximum age"
        case count = "over the per-service count"
        case maxUse = "over the spool's maximum use"
        case keepFree = "the file system needs the space"
    }

    var deletions: [(file: Spool.File, reason: Reason)] = []

    init(candidates: [Candidate], limits: Limits, freeBytes: UInt64?, now: Date) {
        let ordered = candidates.sorted { ($0.startedAt, $0.file.service, $0.file.name) < ($1.startedAt, $1.file.service, $1.file.name) }
        var kept: [Candidate] = []
        var deleted = Set<Spool.File>()
        func delete(_ candidate: Candidate, _ reason: Reason) {
            deletions.append((candidate.file, reason))
            deleted.insert(candidate.file)
        }

        let maxAgeSeconds = Double(limits.maxAge.components.seconds)
        for candidate in ordered {
            if maxAgeSeconds > 0, !candidate.isProtected, now.timeIntervalSince(candidate.startedAt) > maxAgeSeconds {
                delete(candidate, .age)
            } else {
                kept.append(candidate)
            }
        }

        var perService: [String: [Candidate]] = [:]
        for candidate in kept { perService[candidate.file.service, default: []].append(candidate) }
        for (_, reports) in perService where reports.count > limits.maxPerService {
            var excess = reports.count - limits.maxPerService
            for candidate in reports where excess > 0 && !candidate.isProtected {
                delete(candidate, .count)
                excess -= 1
            }
        }
        kept.removeAll { deleted.contains($0.file) }

        var used = kept.reduce(UInt64(0)) { $0 + $1.file.size }
        var free = freeBytes
        for candidate in kept where !candidate.isProtected {
            let overUse = used > limits.maxUse
            let short = free.map { $0 < limits.keepFree } ?? false
            guard overUse || short else { break }
            delete(candidate, overUse ? .maxUse : .keepFree)
            used -= candidate.file.size
            free = free.map { $0 + candidate.file.size }
        }
    }
}
