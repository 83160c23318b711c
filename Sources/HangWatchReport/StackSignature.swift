/// The identity of a hang for grouping: a hash of the frames that point at the culprit.
///
/// "App frames" are frames in images that are not part of the system or the Swift runtime (the
/// service's own code). The signature hashes the functions of the first few app frames of the
/// heaviest stack (image name and function start offset, else the frame's offset), which stay the
/// same across runs and hosts of one build and whichever instruction a sample caught; when a stack
/// has no app frame, its first frames are used.
public enum StackSignature {
    /// How many frames go into a signature.
    public static let frameCount = 5

    /// Signature of `frames` (innermost first) resolved against `images`.
    public static func compute(frames: [HangReport.Frame], images: [HangReport.Image]) -> String {
        let chosen = appFrames(frames, images: images)
        let source = chosen.isEmpty ? Array(frames.prefix(frameCount)) : Array(chosen.prefix(frameCount))
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for frame in source {
            let key: String
            if let image = frame.image(in: images), let offset = frame.functionOffset ?? frame.offset {
                key = baseName(image.path) + "+" + offset
            } else {
                key = frame.address
            }
            for byte in key.utf8 + [0] {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
        }
        return String(hash, radix: 16).leftPadded(to: 16)
    }

    /// The frames that belong to the service's own code.
    public static func appFrames(_ frames: [HangReport.Frame], images: [HangReport.Image]) -> [HangReport.Frame] {
        var isSystem: [Int: Bool] = [:]
        return frames.filter { frame in
            guard let imageIndex = frame.image, images.indices.contains(imageIndex) else { return false }
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
