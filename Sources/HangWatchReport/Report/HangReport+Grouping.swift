extension HangReport {
    /// What a group's signature hashes.
    public enum SignatureKind: String, Codable, Sendable, Equatable {
        /// Function names (`nameSignature`): one group across builds, hosts and releases.
        case names
        /// Image offsets (`signature`): one group within one build; a rebuild starts new groups.
        case addresses
    }

    /// The signature a report is grouped by, and its kind.
    public struct Grouping: Sendable, Equatable, Hashable {
        public var signature: String
        public var kind: SignatureKind

        public init(signature: String, kind: SignatureKind) {
            self.signature = signature
            self.kind = kind
        }
    }

    /// How every reader groups this report (`hangwatch top`, `list`, `export --signature`, the
    /// agent's OTLP records, the monitor's folding of repeats): by the name signature of the names
    /// it has now (written into it, or looked up on the fly), else by the address signature.
    public var grouping: Grouping {
        if let names = computedNameSignature { return Grouping(signature: names, kind: .names) }
        return Grouping(signature: signature, kind: .addresses)
    }

    /// The name signature of the heaviest stack as named now; nil when a frame it counts has no
    /// name, or there is no stack.
    public var computedNameSignature: String? {
        guard let heaviest = heaviestStack, !heaviest.frames.isEmpty else { return nil }
        let complete = !(stack(at: heaviest.stack)?.truncated ?? false)
        return StackSignature.computeByNames(frames: heaviest.frames, images: images, complete: complete, wait: heaviestWait)
    }

    /// The system call the thread waited in at the heaviest stack: the most frequent one among
    /// the samples of that stack taken while the thread was blocked (state `S` or `D`); nil when it
    /// computed (or ran) there. Ties go to the name that sorts first.
    public var heaviestWait: String? {
        guard let heaviest = heaviestStack else { return nil }
        var counts: [String: Int] = [:]
        for sample in samples where sample.stack == heaviest.stack && (sample.state == "S" || sample.state == "D") {
            if let call = sample.syscall { counts[call, default: 0] += 1 }
        }
        return counts.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key
    }

    /// Sets `nameSignature` from the names the report has now (after names were written in).
    public mutating func refreshNameSignature() {
        nameSignature = computedNameSignature
    }
}
