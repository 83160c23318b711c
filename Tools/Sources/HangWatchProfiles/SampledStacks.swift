import HangWatchReport

/// A report's samples as weighted stacks: frame names from the root (outermost) to the leaf, and
/// the time each sample stands for (until the next sample; the last, until the hang ended). A stack
/// that stopped before its outermost frame starts with a marker frame, `[stack stops: <why>]`, so a
/// flame graph never shows its last proven frame as a root.
public struct SampledStack: Sendable, Equatable {
    public var frames: [String]
    public var weightMs: Double
    public var file: [String?]
    public var line: [Int?]
    /// Whose code each frame is.
    public var kinds: [FrameKind] = []
    /// The thread was waiting in the kernel (a system call, a sleeping or disk-wait state), not
    /// on a CPU.
    public var blocked = false
}

/// Whose code a frame is, as flame graphs colour it.
public enum FrameKind: Sendable, Equatable {
    /// The service's own code (any image outside the system's and Swift's libraries).
    case app
    /// The C library, the Swift runtime and Foundation, the loader, the vDSO.
    case system
    /// No image is known for the address.
    case unknown
    /// `[stack stops: why]`: where a stack could not be followed further.
    case marker
}

public enum SampledStacks {
    public static func of(_ report: HangReport) -> [SampledStack] {
        let samples = report.samples
        let peer = Self.peer(of: report)
        var result: [SampledStack] = []
        for (index, sample) in samples.enumerated() {
            guard let stackIndex = sample.stack, stackIndex >= 0, stackIndex < report.stacks.count else { continue }
            let weight = weightMs(ofSample: index, in: report)
            let stack = report.stacks[stackIndex]
            let frames = stack.frames.reversed().compactMap { $0 >= 0 && $0 < report.frames.count ? report.frames[$0] : nil }
            let marker = stack.truncated ? [Self.stopMarker(stack)] : []
            let kinds = frames.map { frame -> FrameKind in
                guard let image = frame.image, report.images.indices.contains(image) else { return .unknown }
                return StackSignature.isSystemImage(report.images[image].path) ? .system : .app
            }
            // A sample in the call that waited on I/O: a leaf that names the other end.
            let leaf = peer.flatMap { sample.syscall == report.waitsFor?.syscall ? ["[waits for \($0)]"] : nil } ?? []
            result.append(
                SampledStack(
                    frames: marker + frames.map { FrameNaming.displayName($0, images: report.images) } + leaf, weightMs: weight,
                    file: marker.map { _ in nil } + frames.map(\.file) + leaf.map { _ in nil },
                    line: marker.map { _ in nil } + frames.map(\.line) + leaf.map { _ in nil },
                    kinds: marker.map { _ in .marker } + kinds + leaf.map { _ in .marker }, blocked: Self.isBlocked(sample)))
        }
        for holder in holders(of: report) {
            let frames = holder.stack.frames.reversed().compactMap { $0 >= 0 && $0 < report.frames.count ? report.frames[$0] : nil }
            let kinds = frames.map { frame -> FrameKind in
                guard let image = frame.image, report.images.indices.contains(image) else { return .unknown }
                return StackSignature.isSystemImage(report.images[image].path) ? .system : .app
            }
            let stop = holder.stack.truncated ? [Self.stopMarker(holder.stack)] : []
            result.append(
                SampledStack(
                    frames: [holder.marker] + stop + frames.map { FrameNaming.displayName($0, images: report.images) },
                    weightMs: holder.weightMs, file: [nil] + stop.map { _ in nil } + frames.map(\.file),
                    line: [nil] + stop.map { _ in nil } + frames.map(\.line), kinds: [.marker] + stop.map { _ in .marker } + kinds,
                    blocked: holder.blocked))
        }
        return result
    }

    /// A stack of a thread that held what the hung thread waited for (`waitsFor`'s holder, and the
    /// holders down its chain): counted as its own sample, rooted at a marker that says whose it
    /// is, for as long as the hang was sampled.
    public struct HolderStack: Sendable, Equatable {
        public var stack: HangReport.Stack
        /// `[holder of mutex 0x…: thread 1234 "cache-refresh"]`
        public var marker: String
        public var tid: Int32
        public var weightMs: Double
        public var blocked: Bool
    }

    public static func holders(of report: HangReport) -> [HolderStack] {
        guard let waits = report.waitsFor else { return [] }
        let sampled = report.samples.indices.filter { report.samples[$0].stack != nil }.map { weightMs(ofSample: $0, in: report) }.reduce(0, +)
        var seen: Set<Int32> = [report.thread.tid]
        var result: [HolderStack] = []
        let links = [(waits.kind, waits.address ?? waits.file, waits.holder)] + (waits.chain ?? []).map { ($0.kind, $0.address ?? $0.file, $0.holder) }
        for (kind, object, holder) in links {
            guard let holder, let tid = holder.tid, seen.insert(tid).inserted, let index = holder.stack,
                report.stacks.indices.contains(index)
            else { continue }
            let name = holder.name.map { " \"\($0)\"" } ?? ""
            result.append(
                HolderStack(
                    stack: report.stacks[index], marker: "[holder of \(kind)\(object.map { " " + $0 } ?? ""): thread \(tid)\(name)]", tid: tid,
                    weightMs: sampled, blocked: holder.verdict == "blocked"))
        }
        return result
    }

    /// The lead-up's near misses (`before.nearMisses`) as stacks beside the hang's: each rooted at
    /// `[near miss before the hang]`, weighing the time it is proven to have run (`atLeastMs`). A
    /// near miss without a stack is left out.
    public static func nearMisses(of report: HangReport) -> [SampledStack] {
        (report.before?.nearMisses ?? []).compactMap { miss in
            guard let index = miss.stack, report.stacks.indices.contains(index), miss.atLeastMs > 0 else { return nil }
            let stack = report.stacks[index]
            let frames = stack.frames.reversed().compactMap { $0 >= 0 && $0 < report.frames.count ? report.frames[$0] : nil }
            let stop = stack.truncated ? [Self.stopMarker(stack)] : []
            let kinds = frames.map { frame -> FrameKind in
                guard let image = frame.image, report.images.indices.contains(image) else { return .unknown }
                return StackSignature.isSystemImage(report.images[image].path) ? .system : .app
            }
            return SampledStack(
                frames: [nearMissMarker] + stop + frames.map { FrameNaming.displayName($0, images: report.images) },
                weightMs: miss.atLeastMs, file: [nil] + stop.map { _ in nil } + frames.map(\.file),
                line: [nil] + stop.map { _ in nil } + frames.map(\.line), kinds: [.marker] + stop.map { _ in .marker } + kinds)
        }
    }

    /// The root frame of the near misses' stacks.
    public static let nearMissMarker = "[near miss before the hang]"

    /// The other end of the I/O wait `report` ended in, in words: its address or path and, on this
    /// host, the process or thread holding it (`127.0.0.1:5432 (process 4121 "postgres")`); nil
    /// when the hang waited on no descriptor with an address.
    public static func peer(of report: HangReport) -> String? {
        guard let waits = report.waitsFor, let endpoint = waits.endpoints?.first, waits.endpoints?.count == 1,
            let address = endpoint.remote ?? endpoint.path
        else { return nil }
        guard let holder = endpoint.peers?.first ?? waits.holder else { return address }
        let who = holder.tid.map { "thread \($0)" } ?? holder.pid.map { "process \($0)" }
        return who.map { "\(address) (\($0)\(holder.name.map { " \"\($0)\"" } ?? ""))" } ?? address
    }

    /// The time sample `index` of `report` stands for: until the next sample, the last until the
    /// hang ended.
    static func weightMs(ofSample index: Int, in report: HangReport) -> Double {
        let samples = report.samples
        let next = index + 1 < samples.count ? samples[index + 1].offsetMs : report.durationMs
        return max(0, next - samples[index].offsetMs)
    }

    /// Whether a sample found the thread off the CPU, waiting in the kernel.
    static func isBlocked(_ sample: HangReport.Sample) -> Bool {
        sample.syscall != nil || sample.state == "S" || sample.state == "D"
    }

    /// The root frame of a truncated stack.
    public static func stopMarker(_ stack: HangReport.Stack) -> String {
        "[stack stops: \(stack.truncation ?? "truncated")]"
    }
}
