#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// pprof's profile format (profile.proto, gzip-compressed), for `go tool pprof`, Grafana
/// Pyroscope and the other tools that read it.
///
/// Each sample of each hang is one pprof sample: its stack (leaf first), the value 1 under
/// `samples/count` and the time it stands for under `wall/nanoseconds` (until the next sample; the
/// last, until the hang ended: the weights of `export --format folded`), labelled with the hang's
/// service and id. Frames become locations in mappings (one per image file and build-id) with
/// their function and source line; a stack that stopped early ends in a `[stack stops: why]`
/// function, so no tool takes its last proven frame for a root. Reports from several processes
/// share one profile: locations are keyed by image and file offset, not by address.
public enum PprofExport {
    public static func render(_ reports: [HangReport]) throws -> Data {
        try Gzip.compress(encode(reports))
    }

    /// The profile, uncompressed.
    static func encode(_ reports: [HangReport]) -> [UInt8] {
        var builder = Builder()
        for report in reports { builder.add(report) }
        return builder.encoded(reports)
    }

    /// Interned strings, mappings, functions and locations, and the samples that use them.
    struct Builder {
        var strings: [String] = [""]
        var stringIndex: [String: Int64] = ["": 0]
        var mappings: [MappingKey: Mapping] = [:]
        var functions: [FunctionKey: UInt64] = [:]
        var locations: [LocationKey: Location] = [:]
        var samples: [Sample] = []

        struct MappingKey: Hashable {
            var path: String
            var buildID: String?
        }
        struct Mapping {
            var id: UInt64
            var start: UInt64
            var limit: UInt64
            var path: String
            var buildID: String?
            var hasFunctions = false
            var hasLines = false
        }
        struct FunctionKey: Hashable {
            var name: String
            var file: String?
        }
        enum LocationKey: Hashable {
            /// A frame in an image: the same code in every process.
            case image(MappingKey, offset: UInt64, function: FunctionKey, line: Int?)
            /// A frame outside every known image, or a marker: by name.
            case loose(FunctionKey, line: Int?)
        }
        struct Location {
            var id: UInt64
            var mappingID: UInt64
            var address: UInt64
            var functionID: UInt64
            var line: Int64
        }
        struct Sample {
            var locations: [UInt64]
            var weightNanoseconds: Int64
            var labels: [(key: Int64, value: Int64)]
        }

        mutating func string(_ text: String) -> Int64 {
            if let known = stringIndex[text] { return known }
            strings.append(text)
            stringIndex[text] = Int64(strings.count - 1)
            return Int64(strings.count - 1)
        }

        mutating func function(_ key: FunctionKey) -> UInt64 {
            if let known = functions[key] { return known }
            let id = UInt64(functions.count + 1)
            functions[key] = id
            return id
        }

        mutating func add(_ report: HangReport) {
            // The main executable's mapping first: tools take mapping 1 for the program.
            if let main = report.images.first(where: \.isMainExecutable) { _ = mapping(main) }
            let service = string("service"), hang = string("hang")
            var labels = [(service, string(report.service)), (hang, string(report.id))]
            // The other end of an I/O wait (an address, and the process holding it on this host).
            if let peer = SampledStacks.peer(of: report) { labels.append((string("peer"), string(peer))) }
            for (index, sample) in report.samples.enumerated() {
                guard let stackIndex = sample.stack, stackIndex >= 0, stackIndex < report.stacks.count else { continue }
                let weight = SampledStacks.weightMs(ofSample: index, in: report)
                let stack = report.stacks[stackIndex]
                var ids = stack.frames.compactMap { frameIndex -> UInt64? in
                    guard frameIndex >= 0, frameIndex < report.frames.count else { return nil }
                    return location(report.frames[frameIndex], in: report)
                }
                if stack.truncated {
                    ids.append(location(marker: SampledStacks.stopMarker(stack)))
                }
                guard !ids.isEmpty else { continue }
                samples.append(Sample(locations: ids, weightNanoseconds: Int64(clamping: Int64(exactly: (weight * 1e6).rounded()) ?? 0), labels: labels))
            }
            // The threads that held what it waited for: samples of their own, labelled so.
            let role = string("role"), holderRole = string("holder"), thread = string("thread")
            for holder in SampledStacks.holders(of: report) {
                var ids = holder.stack.frames.compactMap { frameIndex -> UInt64? in
                    guard frameIndex >= 0, frameIndex < report.frames.count else { return nil }
                    return location(report.frames[frameIndex], in: report)
                }
                if holder.stack.truncated { ids.append(location(marker: SampledStacks.stopMarker(holder.stack))) }
                ids.append(location(marker: holder.marker))
                samples.append(
                    Sample(
                        locations: ids, weightNanoseconds: Int64(clamping: Int64(exactly: (holder.weightMs * 1e6).rounded()) ?? 0),
                        labels: labels + [(role, holderRole), (thread, string(String(holder.tid)))]))
            }
        }

        mutating func location(marker: String) -> UInt64 {
            let function = FunctionKey(name: marker, file: nil)
            let key = LocationKey.loose(function, line: nil)
            if let known = locations[key] { return known.id }
            let id = UInt64(locations.count + 1)
            locations[key] = Location(id: id, mappingID: 0, address: 0, functionID: self.function(function), line: 0)
            return id
        }

        mutating func location(_ frame: HangReport.Frame, in report: HangReport) -> UInt64 {
            let function = FunctionKey(name: FrameNaming.displayName(frame, images: report.images), file: frame.file)
            let named = frame.symbol != nil
            if let imageIndex = frame.image, imageIndex >= 0, imageIndex < report.images.count, let offset = frame.offset.flatMap(HexText.parse) {
                let image = report.images[imageIndex]
                let mappingKey = self.mapping(image)
                var mapping = mappings[mappingKey]!
                mapping.hasFunctions = mapping.hasFunctions || named
                mapping.hasLines = mapping.hasLines || frame.line != nil
                mappings[mappingKey] = mapping
                let key = LocationKey.image(mappingKey, offset: offset, function: function, line: frame.line)
                if let known = locations[key] { return known.id }
                let id = UInt64(locations.count + 1)
                locations[key] = Location(
                    id: id, mappingID: mapping.id, address: mapping.start &+ offset, functionID: self.function(function),
                    line: Int64(frame.line ?? 0))
                return id
            }
            let key = LocationKey.loose(function, line: frame.line)
            if let known = locations[key] { return known.id }
            let id = UInt64(locations.count + 1)
            locations[key] = Location(
                id: id, mappingID: 0, address: HexText.parse(frame.address) ?? 0, functionID: self.function(function), line: Int64(frame.line ?? 0))
            return id
        }

        /// The mapping of `image` (made on first use, placed where the first report that has it
        /// loaded it), by its key.
        mutating func mapping(_ image: HangReport.Image) -> MappingKey {
            let key = MappingKey(path: image.path, buildID: image.buildId)
            if mappings[key] == nil {
                let base = HexText.parse(image.base) ?? 0
                mappings[key] = Mapping(
                    id: UInt64(mappings.count + 1), start: base, limit: base &+ max(image.size, 1), path: image.path, buildID: image.buildId)
            }
            return key
        }

        mutating func encoded(_ reports: [HangReport]) -> [UInt8] {
            let countType = (string("samples"), string("count"))
            let wallType = (string("wall"), string("nanoseconds"))
            // Names and files interned before the table is written.
            let functionRows = functions.sorted { $0.value < $1.value }.map { ($0.value, string($0.key.name), $0.key.file.map { string($0) } ?? 0) }
            let mappingRows = mappings.values.sorted { $0.id < $1.id }.map { ($0, string($0.path), $0.buildID.map { string($0) } ?? 0) }
            let comment = string("hangwatch export: \(reports.count) hang\(reports.count == 1 ? "" : "s")")
            let start = reports.map(\.startedAt).min()
            let end = reports.map { $0.endedAt ?? $0.startedAt.addingTimeInterval($0.durationMs / 1000) }.max()
            let interval = reports.first.map { $0.capture.sampleIntervalMs } ?? 0

            var writer = ProtobufWriter()
            for (type, unit) in [countType, wallType] {
                writer.message(1) { $0.int64(1, type); $0.int64(2, unit) }
            }
            for sample in samples {
                writer.message(2) { message in
                    message.packedUInt64(1, sample.locations)
                    message.packedInt64(2, [1, sample.weightNanoseconds])
                    for label in sample.labels {
                        message.message(3) { $0.int64(1, label.key); $0.int64(2, label.value) }
                    }
                }
            }
            for (mapping, file, buildID) in mappingRows {
                writer.message(3) { message in
                    message.uint64(1, mapping.id)
                    message.uint64(2, mapping.start)
                    message.uint64(3, mapping.limit)
                    message.int64(5, file)
                    message.int64(6, buildID)
                    message.bool(7, mapping.hasFunctions)
                    message.bool(8, mapping.hasLines)
                    message.bool(9, mapping.hasLines)
                }
            }
            for location in locations.values.sorted(by: { $0.id < $1.id }) {
                writer.message(4) { message in
                    message.uint64(1, location.id)
                    message.uint64(2, location.mappingID)
                    message.uint64(3, location.address)
                    message.message(4) { $0.uint64(1, location.functionID); $0.int64(2, location.line) }
                }
            }
            for (id, name, file) in functionRows {
                writer.message(5) { message in
                    message.uint64(1, id)
                    message.int64(2, name)
                    message.int64(3, name)
                    message.int64(4, file)
                }
            }
            for text in strings { writer.string(6, text) }
            if let start { writer.int64(9, Int64((start.timeIntervalSince1970 * 1e9).rounded())) }
            if let start, let end { writer.int64(10, Int64(max(0, end.timeIntervalSince(start)) * 1e9)) }
            writer.message(11) { $0.int64(1, wallType.0); $0.int64(2, wallType.1) }
            writer.int64(12, Int64((interval * 1e6).rounded()))
            writer.packedInt64(13, [comment])
            writer.int64(14, wallType.0)
            return writer.bytes
        }
    }
}
