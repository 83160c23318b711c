#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// speedscope's file format (https://www.speedscope.app/file-format-schema.json): one sampled
/// profile per hang, weights in milliseconds of sampled time.
public enum SpeedscopeExport {
    struct File: Encodable {
        let schema = "https://www.speedscope.app/file-format-schema.json"
        var shared: Shared
        var profiles: [Profile]
        var name: String
        let exporter = "hangwatch"
        enum CodingKeys: String, CodingKey {
            case schema = "$schema", shared, profiles, name, exporter
        }
    }
    struct Shared: Encodable { var frames: [Frame] }
    struct Frame: Encodable, Hashable {
        var name: String
        var file: String?
        var line: Int?
    }
    struct Profile: Encodable {
        let type = "sampled"
        var name: String
        let unit = "milliseconds"
        var startValue: Double
        var endValue: Double
        var samples: [[Int]]
        var weights: [Double]
    }

    public static func render(_ reports: [HangReport], name: String = "HangWatch hangs") throws -> Data {
        var frames: [Frame] = []
        var frameIndex: [Frame: Int] = [:]
        var profiles: [Profile] = []
        for report in reports {
            var samples: [[Int]] = []
            var weights: [Double] = []
            for stack in SampledStacks.of(report) {
                samples.append(stack.frames.indices.map { position in
                    let frame = Frame(name: stack.frames[position], file: stack.file[position], line: stack.line[position])
                    if let known = frameIndex[frame] { return known }
                    frames.append(frame)
                    frameIndex[frame] = frames.count - 1
                    return frames.count - 1
                })
                weights.append(finite((stack.weightMs * 1000).rounded() / 1000))
            }
            profiles.append(
                Profile(
                    name: "\(report.service) \(ReportTimestamp.format(report.startedAt)) (\(wholeMilliseconds(report.durationMs)) ms)",
                    startValue: 0, endValue: finite((weights.reduce(0, +) * 1000).rounded() / 1000), samples: samples, weights: weights))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(File(shared: Shared(frames: frames), profiles: profiles, name: name))
    }

    /// Weights past what JSON holds (two samples 1.7e308 ms apart in a report file) as the largest
    /// it holds: one report must not make a whole export fail.
    static func finite(_ value: Double) -> Double {
        value.isFinite ? value : .greatestFiniteMagnitude
    }

    /// A report file's duration may be any JSON number, 1e308 included, which has no Int.
    static func wholeMilliseconds(_ value: Double) -> String {
        Int(exactly: value.rounded()).map(String.init) ?? String(printf: "%.0f", value)
    }
}
