#if canImport(Glibc)
import Glibc
#endif

/// Which HangWatch wrote a report or is running: the version `git describe` gave the build (or the
/// `VERSION` file of a source tarball), and the commit. Set by `make`, which writes
/// `MonitorVersion+Stamp.swift` before it builds (scripts/stamp-version); a plain `swift build`
/// (a service that depends on this package, a build without make) says the `VERSION` file's
/// version with `-dev` (`0.1.0-dev`, from `MonitorVersion+Release.swift`) and no commit.
///
/// Written into every hang report as `monitor` (docs/report-format.md); printed by
/// `hangwatch --version` and `hangwatchd --version`, with the binary's ELF build-id.
public struct MonitorVersion: Codable, Sendable, Equatable {
    /// `git describe --tags --always --dirty` of the tree built, e.g. `0.2.0`, `0.2.0-3-g1a2b3c4`,
    /// `0.2.0-dirty`; `release` and `-dev` (`0.1.0-dev`) when the build was not stamped.
    public var version: String
    /// The full commit the build was made from; absent when unknown (unstamped, or a tarball).
    public var commit: String?

    public init(version: String, commit: String? = nil) {
        self.version = version
        self.commit = commit
    }

    /// This build's version.
    public static let current = MonitorVersion(version: BuildStamp.version, commit: BuildStamp.commit)

    /// What `--version` prints: the version, then the commit and the running binary's ELF build-id
    /// where known (`0.2.0 (commit 1a2b3c4d5e6f, build-id 8f1e…)`).
    public static func versionLine() -> String {
        var details: [String] = []
        if let commit = current.commit { details.append("commit \(commit.prefix(12))") }
        if let buildID = ExecutableBuildID.read(path: "/proc/self/exe") { details.append("build-id \(buildID)") }
        return details.isEmpty ? current.version : "\(current.version) (\(details.joined(separator: ", ")))"
    }
}

/// What `make` stamps into the build. The defaults below are the unstamped build's; the generated,
/// git-ignored `MonitorVersion+Stamp.swift` declares the same members on `BuildStamp` itself, which
/// take precedence over these protocol-extension defaults. So the module compiles with or without it.
protocol BuildStamping {}

extension BuildStamping {
    static var version: String { MonitorVersion.release + "-dev" }
    static var commit: String? { nil }
}

enum BuildStamp: BuildStamping {}
