import Foundation
import HangWatchReport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Frames that point into this process's C library, as raw addresses a monitor would capture:
/// real code in a real binary on disk, which the agent's symbolicator can name (and fast: libc is
/// small, unlike the test bundle).
enum LibcFrames {
    /// The C library's path, load address, and the offsets of `getpid` and `getppid` in it (from
    /// `dlsym` and `/proc/self/maps`: the image starts at its mapping of file offset 0).
    static let image: (path: String, base: UInt, offsets: [String: UInt64])? = {
        // Read to the end (a /proc file has no size to go by).
        guard let data = FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile() else { return nil }
        let maps = String(decoding: data, as: UTF8.self)
        let mappings = maps.split(separator: "\n").compactMap { line -> (start: UInt, end: UInt, offset: UInt, path: String)? in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[5].hasPrefix("/") else { return nil }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
                let offset = UInt(fields[2], radix: 16)
            else { return nil }
            return (start, end, offset, String(fields[5]))
        }
        var offsets: [String: UInt64] = [:]
        var image: (path: String, base: UInt)?
        for name in ["getpid", "getppid"] {
            guard let symbol = dlsym(nil, name) else { return nil }
            let address = UInt(bitPattern: symbol)
            guard let mapping = mappings.first(where: { $0.start <= address && address < $0.end }),
                let first = mappings.first(where: { $0.path == mapping.path && $0.offset == 0 })
            else { return nil }
            image = (mapping.path, first.start)
            offsets[name] = UInt64(address - first.start)
        }
        return image.map { ($0.path, $0.base, offsets) }
    }()

    /// `report` with its frames replaced by raw frames in `getppid` (innermost) called from
    /// `getpid`, in the C library; `buildID` is what the report claims the library's is.
    static func rewrite(_ report: HangReport, buildID: String? = nil) throws -> HangReport {
        let image = try #require(Self.image, "the C library's symbols cannot be found")
        var report = report
        let inner = try #require(image.offsets["getppid"]), outer = try #require(image.offsets["getpid"])
        let frames = [inner, outer + 1].map { offset in
            HangReport.Frame(address: "0x" + String(UInt64(image.base) + offset, radix: 16), image: 0, offset: "0x" + String(offset, radix: 16))
        }
        report.images = [
            .init(path: image.path, buildId: buildID, base: "0x" + String(image.base, radix: 16), size: 0x200000, isMainExecutable: false)
        ]
        report.frames = frames
        report.stacks = [.init(frames: [0, 1], truncated: false)]
        report.heaviestStack = .init(stack: 0, sampleCount: 2, weightMs: 200, frames: frames)
        report.samples = report.samples.map { sample in
            var sample = sample
            sample.stack = 0
            return sample
        }
        report.symbolication = nil
        return report
    }
}
