/// The identity of a hang for grouping: a hash of the heaviest stack's call path.
///
/// - Two hangs whose heaviest stacks differ in their app frames (frames in images that are not part
///   of the system or the Swift runtime: the service's own code) never share a signature: every app
///   frame counts, each by its call site (the return address's offset in its image; the innermost
///   frame, the exact instruction, by its function's start instead, so that samples at different
///   instructions of one function agree). System frames do not count: which libc or Foundation
///   internals a sample caught does not change the culprit.
/// - When the only app frames are the process's entry frames (`_start`, `main`, among the outermost
///   frames of a complete stack: every hang of the process has them), the stack's system frames
///   count too, so such hangs are told apart by the system code they were in.
/// - A stack that stops before its outermost frame (truncated) gets a different signature from a
///   complete one with the same frames: it is marked as such in the hash.
///
/// Stable across runs and hosts of one build (image file names and offsets, never addresses).
/// Across builds, by function names: `computeByNames` (StackSignature+Names.swift).
public enum StackSignature {
    /// How many of the outermost frames of a complete stack are the process's entry (`_start`,
    /// `__libc_start_main`, `__libc_start_call_main`, `main`; `clone3`, `start_thread` and a
    /// thread's entry function for other threads).
    public static let entryDepth = 4

    /// Signature of `frames` (innermost first) resolved against `images`; `complete` when the stack
    /// reached its outermost frame. `computing`: the thread computed at this stack (no sample of it
    /// blocked): its innermost app frame counts by its function, not by the call it was in, so a
    /// loop sampled in its own code and in a system function it calls (`clock_gettime`, `memcpy`)
    /// is one problem. A thread that blocked keeps the call site: which call waits matters.
    public static func compute(frames: [HangReport.Frame], images: [HangReport.Image], complete: Bool = true, computing: Bool = false) -> String {
        let app = appFrameIndices(frames, images: images)
        let entry = complete ? max(0, frames.count - entryDepth) : frames.count
        let chosen = app.contains { $0 < entry } ? app : Array(frames.indices)
        let byFunction = computing ? chosen.first ?? 0 : 0
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ text: String) {
            for byte in text.utf8 + [0] {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
        }
        if !complete { mix("truncated") }
        for index in chosen {
            let frame = frames[index]
            if let image = frame.image(in: images), let offset = index == 0 || index == byFunction ? frame.functionOffset ?? frame.offset : frame.offset {
                mix(baseName(image.path) + "+" + offset)
            } else {
                mix(frame.address)
            }
        }
        return String(hash, radix: 16).leftPadded(to: 16)
    }

    /// The frames that belong to the service's own code.
    public static func appFrames(_ frames: [HangReport.Frame], images: [HangReport.Image]) -> [HangReport.Frame] {
        appFrameIndices(frames, images: images).map { frames[$0] }
    }

    static func appFrameIndices(_ frames: [HangReport.Frame], images: [HangReport.Image]) -> [Int] {
        var isSystem: [Int: Bool] = [:]
        return frames.indices.filter { index in
            guard let imageIndex = frames[index].image, images.indices.contains(imageIndex) else { return false }
            if let known = isSystem[imageIndex] { return !known }
            let system = isSystemImage(images[imageIndex].path)
            isSystem[imageIndex] = system
            return !system
        }
    }

    /// True for the C library, the loader, the Swift runtime and Foundation, and anything installed
    /// under the system library directories.
    public static func isSystemImage(_ path: String) -> Bool {
        let name = baseName(path)
        let systemPrefixes = [
            "libc.so", "libc-", "libm.so", "libpthread", "ld-linux", "libdl.so", "librt.so", "libstdc++", "libgcc_s",
            "libswift", "libFoundation", "libCoreFoundation", "lib_FoundationICU", "libdispatch", "libBlocksRuntime",
            "libunwind", "libicu", "linux-vdso",
        ]
        if systemPrefixes.contains(where: { name.hasPrefix($0) }) { return true }
        let systemDirectories = ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/opt/swift/"]
        return systemDirectories.contains(where: { path.hasPrefix($0) })
    }

    /// The last path component.
    public static func baseName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}

extension String {
    func leftPadded(to width: Int, with character: Character = "0") -> String {
        count >= width ? self : String(repeating: character, count: width - count) + self
    }
}
