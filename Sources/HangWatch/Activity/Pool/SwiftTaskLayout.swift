#if canImport(Glibc)
import Glibc
#endif

/// Whether this process's Swift concurrency runtime lays its tasks out as the monitor reads them
/// (`UnsafeCurrentTaskSlot`: a task's id at Swift 6.3's offsets). The runtime says which layout it
/// has for debuggers, in two exported words: `_swift_concurrency_debug_internal_layout_version` and
/// `_swift_concurrency_debug_asyncTaskSize`. A layout not in `verified` is not read: what depends on
/// it (the labels of `async` code, and following a pool job that computes) is unavailable, and the
/// monitor says so in its log, its heartbeat and every report (`description`), instead of leaving
/// it silently out.
enum SwiftTaskLayout: Equatable, Sendable {
    /// A layout the monitor was verified against.
    case recognised
    /// Another layout: its words, as the runtime gave them.
    case unrecognised(layoutVersion: UInt32, taskSize: UInt)
    /// No concurrency runtime in the process (or one that exports neither word): nothing to read.
    case noRuntime

    /// The layouts the offsets were checked against: (layout version, task size in bytes), where.
    static let verified: [(layoutVersion: UInt32, taskSize: UInt, runtime: String)] = [
        (1, 208, "Swift 6.3.1 on Linux x86_64")
    ]

    /// The decision, from the runtime's words.
    static func recognise(layoutVersion: UInt32?, taskSize: UInt?) -> SwiftTaskLayout {
        guard let layoutVersion, let taskSize else { return .noRuntime }
        return verified.contains { $0.layoutVersion == layoutVersion && $0.taskSize == taskSize }
            ? .recognised : .unrecognised(layoutVersion: layoutVersion, taskSize: taskSize)
    }

    /// This process's layout, read once.
    static let current: SwiftTaskLayout = {
        let anyImage: UnsafeMutableRawPointer? = nil  // glibc's RTLD_DEFAULT
        let version = dlsym(anyImage, "_swift_concurrency_debug_internal_layout_version")
        let size = dlsym(anyImage, "_swift_concurrency_debug_asyncTaskSize")
        return recognise(
            layoutVersion: version.map { $0.load(as: UInt32.self) }, taskSize: size.map { UInt($0.load(as: UInt64.self)) })
    }()

    /// Whether the task's words may be read.
    var isReadable: Bool { self == .recognised }

    /// What is unavailable and why, when the layout is not recognised (nil otherwise): the words of
    /// the log, the heartbeat's flag and the reports' `capture.unavailable`.
    var description: String? {
        guard case .unrecognised(let version, let size) = self else { return nil }
        let verified = Self.verified.map { "layout \($0.layoutVersion), \($0.taskSize) bytes: \($0.runtime)" }.joined(separator: "; ")
        return "async callers' labels and pool jobs that compute unavailable: Swift runtime layout not recognised "
            + "(concurrency layout version \(version), task size \(size) bytes; verified: \(verified))"
    }
}
