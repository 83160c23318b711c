import HangWatchReport

/// The ELF images loaded in this process, and what the unwinder needs to know about each.
struct ImageMap: Sendable, Equatable {
    struct Image: Sendable, Equatable {
        var path: String
        var buildID: String?
        /// Load bias: added to the ELF file's virtual addresses.
        var bias: UInt
        /// Loaded segments, absolute addresses.
        var segments: [Range<UInt>]
        /// Executable segments, with where their unwind table lives.
        var unwindSegments: [UnwindSegment]
        var isMainExecutable: Bool
        /// Function symbols of an image that is not a file (the vDSO): names no symbolicator could
        /// find later, so the monitor writes them into its reports.
        var memorySymbols: [MemorySymbol] = []

        var span: UInt64 {
            guard let low = segments.map(\.lowerBound).min(), let high = segments.map(\.upperBound).max() else { return 0 }
            return UInt64(high - low)
        }
    }

    /// A function of an in-memory image: where it starts (file address), how long, what it is called.
    struct MemorySymbol: Sendable, Equatable {
        var start: UInt
        var size: UInt
        var name: String
    }

    /// An executable segment and its `.eh_frame_hdr` binary-search table.
    struct UnwindSegment: Sendable, Equatable {
        var range: Range<UInt>
        var globalPointer: UInt
        var ehFrameHeader: UInt
        var tableData: UInt
        var tableWords: UInt
    }

    var images: [Image]
    /// (segment, image index), sorted by address.
    private var index: [(range: Range<UInt>, image: Int)]

    init(images: [Image]) {
        self.images = images
        index = images.enumerated().flatMap { offset, image in image.segments.map { (range: $0, image: offset) } }
            .sorted { $0.range.lowerBound < $1.range.lowerBound }
    }

    static func == (lhs: ImageMap, rhs: ImageMap) -> Bool { lhs.images == rhs.images }

    /// Index of the image that contains `address`.
    func imageIndex(containing address: UInt) -> Int? {
        var low = 0
        var high = index.count
        while low < high {
            let mid = (low + high) / 2
            let entry = index[mid]
            if address < entry.range.lowerBound {
                high = mid
            } else if address >= entry.range.upperBound {
                low = mid + 1
            } else {
                return entry.image
            }
        }
        return nil
    }

    /// Start of the function containing `address`, from the image's unwind table; nil when unknown.
    /// Lets samples taken at different points of one function count as the same stack.
    func functionStart(of address: UInt) -> UInt? {
        guard let image = imageIndex(containing: address) else { return nil }
        guard let segment = images[image].unwindSegments.first(where: { $0.range.contains(address) }) else { return nil }
        return UnsafeImageMapReader.functionStart(of: address, in: segment)
    }

    /// Whether `address`, read from the heap as an async caller's resume point, is provably the
    /// first instruction of a function. Either an unwind-table entry starts exactly there, or no
    /// entry covers it (Swift 6.3's own runtime has resume functions without one, such as
    /// `TaskLocal.withValueImpl`'s, which Hummingbird's handlers run under) and its first bytes are
    /// the prologue of a Swift async function (`AsyncPrologue`). An address inside a function
    /// never passes.
    func isAsyncResumeStart(_ address: UInt) -> Bool {
        guard let image = imageIndex(containing: address),
            let segment = images[image].unwindSegments.first(where: { $0.range.contains(address) })
        else { return false }
        if let start = UnsafeImageMapReader.functionStart(of: address, in: segment) { return start == address }
        return AsyncPrologue.begins(at: address, in: segment.range)
    }

    /// The name of the function at `address` in an image that is not a file (the vDSO); nil for
    /// every other image (symbolication names those later, from the files).
    func memorySymbolName(of address: UInt) -> String? {
        guard let index = imageIndex(containing: address), !images[index].memorySymbols.isEmpty else { return nil }
        let offset = address &- images[index].bias
        return images[index].memorySymbols.first { offset >= $0.start && offset < $0.start + max($0.size, 1) }?.name
    }

    /// Whether every address is inside a known image.
    func covers(_ addresses: [UInt]) -> Bool {
        addresses.allSatisfy { imageIndex(containing: $0) != nil }
    }

    /// The images as a report lists them.
    var reportImages: [HangReport.Image] {
        images.map { image in
            HangReport.Image(
                path: image.path, buildId: image.buildID, base: Hex.format(image.bias), size: image.span,
                isMainExecutable: image.isMainExecutable)
        }
    }
}

/// Addresses as reports write them.
enum Hex {
    static func format(_ value: UInt) -> String {
        "0x" + String(value, radix: 16)
    }

    static func parse(_ text: String) -> UInt? {
        text.hasPrefix("0x") ? UInt(text.dropFirst(2), radix: 16) : nil
    }
}
