#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension HangReport {
    /// One look at the hung thread.
    public struct Sample: Codable, Sendable, Equatable {
        /// Milliseconds since `startedAt`.
        public var offsetMs: Double
        /// Index into `stacks`; nil when this sample has no stack (see `error`).
        public var stack: Int?
        /// How the stack was taken: `signal` (the thread unwound itself in a signal handler),
        /// `syscall` (unwound from outside while the thread was blocked in a system call; no signal
        /// was sent), or `unchanged` (still blocked in the same call as the previous sample).
        public var method: String?
        /// Scheduler state letter from /proc (`R` running, `S` sleeping, `D` disk wait, `T` stopped, ...).
        public var state: String?
        /// The system call the thread was blocked in, if any.
        public var syscall: String?
        /// Thread CPU time consumed since the hang started, in milliseconds.
        public var cpuMs: Double?
        /// Time spent runnable but waiting for a CPU since the hang started, in milliseconds.
        public var runQueueMs: Double?
        /// How long the thread was paused by the capture signal handler, in microseconds.
        public var pauseUs: Double?
        /// Why there is no stack, or why it may be incomplete.
        public var error: String?
        /// Schema 1.4: `true` when the capture signal arrived while the thread was in a system call
        /// and cut it short (the call returned EINTR to the thread's code); absent otherwise.
        public var cutCallShort: Bool?

        public init(
            offsetMs: Double, stack: Int?, method: String?, state: String?, syscall: String?, cpuMs: Double?,
            runQueueMs: Double?, pauseUs: Double?, error: String?, cutCallShort: Bool? = nil
        ) {
            self.cutCallShort = cutCallShort
            self.offsetMs = offsetMs
            self.stack = stack
            self.method = method
            self.state = state
            self.syscall = syscall
            self.cpuMs = cpuMs
            self.runQueueMs = runQueueMs
            self.pauseUs = pauseUs
            self.error = error
        }
    }

    /// A captured stack: indices into `frames`, innermost first.
    public struct Stack: Codable, Sendable, Equatable {
        public var frames: [Int]
        /// The walk stopped before the outermost frame: the frames are a true prefix of the stack,
        /// and what lies beyond is unknown (see `truncation`).
        public var truncated: Bool
        /// Why it stopped (schema 1.1): `frame limit`, `no unwind information`, `unreadable memory`,
        /// `stack pointer did not advance`, `frame pointer ambiguous`, `frame pointer unproven`,
        /// `unwinder busy`, `unwind failed`. Absent for a complete stack, and in 1.0 reports.
        public var truncation: String?
        /// For a thread blocked in a system call, whose frame pointer `/proc` does not give: how the
        /// walk found it (schema 1.1): `prologue` (the function's fixed frame size) or `frame record`
        /// (the one record on the stack that checks out). Absent when no frame needed it.
        public var framePointer: String?
        /// When the stack runs an async function (schema 1.2): how its chain of async callers
        /// (the frames marked `async`, right after it) ended: `complete` (up to the task's start),
        /// or why it stopped early: `async caller limit`, `async context unreadable`, `async context
        /// invalid`, `async resume address unproven`. Absent when no async function was found.
        public var asyncCallers: String?
        public init(
            frames: [Int], truncated: Bool, truncation: String? = nil, framePointer: String? = nil, asyncCallers: String? = nil
        ) {
            self.frames = frames
            self.truncated = truncated
            self.truncation = truncation
            self.framePointer = framePointer
            self.asyncCallers = asyncCallers
        }
    }

    /// The stack most samples share, weighted by the time each sample stands for.
    public struct HeaviestStack: Codable, Sendable, Equatable {
        /// Index into `stacks`.
        public var stack: Int
        public var sampleCount: Int
        public var weightMs: Double
        /// The stack's frames inline, innermost first, so a reader needs no index lookups.
        public var frames: [Frame]
        public init(stack: Int, sampleCount: Int, weightMs: Double, frames: [Frame]) {
            self.stack = stack
            self.sampleCount = sampleCount
            self.weightMs = weightMs
            self.frames = frames
        }
    }

    /// One code address, and what symbolication made of it.
    public struct Frame: Codable, Sendable, Equatable, Hashable {
        /// The absolute address in the process, hexadecimal.
        public var address: String
        /// Index into `images`; nil when no loaded image contains the address.
        public var image: Int?
        /// `address` minus the image's load bias: the address in the ELF file, hexadecimal.
        public var offset: String?
        /// Where the function containing `offset` starts (from the image's unwind table), in the
        /// same terms; frames in one function share it whatever instruction they were at.
        public var functionOffset: String?
        /// Demangled function name, when symbolicated.
        public var symbol: String?
        public var file: String?
        public var line: Int?
        /// An async caller (schema 1.2): not on the thread's stack but read from the async context
        /// chain; `address` is where the caller resumes, the exact entry of a partial function (not
        /// a return address: symbolicate it as it is). Absent for the stack's own frames.
        public var async: Bool?
        public init(
            address: String, image: Int?, offset: String?, functionOffset: String? = nil, symbol: String? = nil,
            file: String? = nil, line: Int? = nil, async: Bool? = nil
        ) {
            self.address = address
            self.image = image
            self.offset = offset
            self.functionOffset = functionOffset
            self.symbol = symbol
            self.file = file
            self.line = line
            self.async = async
        }

        /// Whether the address is exact (an async resume point), not a return address.
        public var isAsyncCaller: Bool { async == true }
    }

    /// A loaded ELF image (the executable or a shared library).
    public struct Image: Codable, Sendable, Equatable {
        public var path: String
        /// GNU build-id, lowercase hexadecimal; nil when the image has none.
        public var buildId: String?
        /// Load bias (added to ELF virtual addresses), hexadecimal.
        public var base: String
        /// Bytes spanned by its loaded segments.
        public var size: UInt64
        public var isMainExecutable: Bool
        public init(path: String, buildId: String?, base: String, size: UInt64, isMainExecutable: Bool) {
            self.path = path
            self.buildId = buildId
            self.base = base
            self.size = size
            self.isMainExecutable = isMainExecutable
        }
    }
}

// A report is read from a file: its indices are not trusted. Every lookup by index goes through
// these, which answer nil (or skip) for an index out of range, negative ones included.
extension HangReport {
    /// The stack at `index`; nil when there is none.
    public func stack(at index: Int) -> Stack? {
        stacks.indices.contains(index) ? stacks[index] : nil
    }

    /// The frames of `stack`, innermost first; indices that point at no frame are skipped.
    public func frames(of stack: Stack) -> [Frame] {
        stack.frames.compactMap { frames.indices.contains($0) ? frames[$0] : nil }
    }
}

extension HangReport.Frame {
    /// The image this frame is in; nil when it has none, or its index points at no image.
    public func image(in images: [HangReport.Image]) -> HangReport.Image? {
        guard let image, images.indices.contains(image) else { return nil }
        return images[image]
    }
}
