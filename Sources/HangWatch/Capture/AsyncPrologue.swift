/// The first instructions of a Swift async function that keeps a frame pointer, which SwiftPM
/// builds ask for (`-fno-omit-frame-pointer`) and the Swift runtime's own async functions have.
/// x86_64: `push %rbp; push %r14; lea 0x8(%rsp),%rbp` (the async context, in r14, saved just
/// below the frame record), optionally after `bts $60,%rbp` (the extended-frame marking some builds
/// emit). No other code begins this way: a C function's frame is `push %rbp; mov %rsp,%rbp`.
/// Other architectures: no pattern, never matches (their chains end `unproven` where the unwind
/// tables have no entry).
enum AsyncPrologue {
    #if arch(x86_64)
    static let frame: [UInt8] = [0x55, 0x41, 0x56, 0x48, 0x8d, 0x6c, 0x24, 0x08]
    static let marking: [UInt8] = [0x48, 0x0f, 0xba, 0xed, 0x3c]
    #else
    static let frame: [UInt8] = []
    static let marking: [UInt8] = []
    #endif

    /// Whether the code at `address` (inside `segment`, an executable segment of a loaded image)
    /// begins with the prologue. Functions start 16-byte aligned; anything else is no start.
    static func begins(at address: UInt, in segment: Range<UInt>) -> Bool {
        guard !frame.isEmpty, address % 16 == 0, address >= segment.lowerBound,
            segment.upperBound - address >= UInt(marking.count + frame.count),
            let code = UnsafeLoadedMemory.bytes(at: address, count: marking.count + frame.count)
        else { return false }
        return code.starts(with: frame) || code.starts(with: marking + frame)
    }

    /// `begins(at:in:)` on bytes already read (tests).
    static func begins(_ code: [UInt8]) -> Bool {
        !frame.isEmpty && (code.starts(with: frame) || code.starts(with: marking + frame))
    }
}
