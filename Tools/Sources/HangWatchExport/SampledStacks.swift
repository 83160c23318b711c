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
            result.append(
                SampledStack(
                    frames: marker + frames.map { FrameNaming.displayName($0, images: report.images) }, weightMs: weight,
                    file: marker.map { _ in nil } + frames.map(\.file), line: marker.map { _ in nil } + frames.map(\.line),
                    kinds: marker.map { _ in .marker } + kinds, blocked: Self.isBlocked(sample)))
        }
        return result
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
