#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport
import Synchronization

/// Fills in function names (demangled) and file:line for the frames of hang reports, from the
/// images the report lists, verified by build-id. Keeps each image's tables open between reports,
/// so the second report from the same binaries is fast.
///
/// Use it from the CLI or the agent, or hand it to `HangMonitor` as its enricher to symbolicate in
/// the monitored process (off the monitored thread, after each hang; it then holds the binaries'
/// symbol and line tables in memory).
public final class Symbolicator: HangReportEnricher, Sendable {
    private let debugDirectories: [String]
    /// The open images. libdw sessions are not thread-safe: the lock is held for a whole report.
    private let cache = Mutex<[String: Entry]>([:])

    private enum Entry {
        case loaded(ImageSymbols)
        case failed(ImageSymbolsError)
    }

    /// `debugDirectories` are searched for separate debug files by build-id before the system's.
    public init(debugDirectories: [String] = []) {
        self.debugDirectories = debugDirectories
    }

    /// What one symbolication run did.
    public struct Summary: Sendable, Equatable {
        public var framesResolved = 0
        public var framesUnresolved = 0
        /// Images that could not be used, with why.
        public var imageErrors: [String: ImageSymbolsError] = [:]
    }

    public func enrich(_ report: inout HangReport) {
        _ = symbolicate(&report)
    }

    /// Symbolicates every frame of `report` in place (existing names are replaced; a frame whose
    /// image cannot be used keeps the name it had), and sets its `nameSignature` from the names
    /// (and the lead-up's reading, the near misses' function, `HangReport.nameNearMisses()`).
    @discardableResult
    public func symbolicate(_ report: inout HangReport) -> Summary {
        let summary = cache.withLock { cache in symbolicate(&report, cache: &cache) }
        report.nameNearMisses()
        return summary
    }

    private func symbolicate(_ report: inout HangReport, cache: inout [String: Entry]) -> Summary {
        var summary = Summary()
        // A return address points after its call: look up the byte before it, except for the
        // innermost frame of a stack (the exact program counter) and async callers.
        let innermost = Set(report.stacks.compactMap(\.frames.first))
        let resolved = report.frames.enumerated().map { index, frame -> HangReport.Frame in
            var frame = frame
            guard let image = frame.image(in: report.images), let offsetText = frame.offset,
                let offset = HexText.parse(offsetText)
            else {
                summary.framesUnresolved += 1
                return frame
            }
            // The vDSO ("linux-vdso.so.1") is not a file: its frames keep their image+offset.
            guard image.path.hasPrefix("/") else {
                summary.framesUnresolved += 1
                return frame
            }
            // An async caller's address is where it resumes: a partial function's first byte, exact.
            let exact = innermost.contains(index) || frame.isAsyncCaller || offset == 0
            let lookupOffset = exact ? offset : offset - 1
            switch symbols(for: image, cache: &cache) {
            case .failure(let error):
                summary.imageErrors[image.path] = error
                summary.framesUnresolved += 1
            case .success(let symbols):
                if let hit = symbols.lookup(offset: lookupOffset) {
                    frame.symbol = hit.symbol
                    frame.file = hit.file
                    frame.line = hit.line
                    summary.framesResolved += 1
                } else {
                    summary.framesUnresolved += 1
                }
            }
            return frame
        }
        report.frames = resolved
        if var heaviest = report.heaviestStack, let stack = report.stack(at: heaviest.stack) {
            heaviest.frames = report.frames(of: stack)
            report.heaviestStack = heaviest
        }
        // The names make the signature that groups the report across builds.
        report.refreshNameSignature()
        return summary
    }

    private func symbols(for image: HangReport.Image, cache: inout [String: Entry]) -> Result<ImageSymbols, ImageSymbolsError> {
        let key = image.path + "\u{0}" + (image.buildId ?? "")
        switch cache[key] {
        case .loaded(let symbols): return .success(symbols)
        case .failed(let error): return .failure(error)
        case nil: break
        }
        do {
            let symbols = try ImageSymbols.open(
                path: image.path, expectedBuildID: image.buildId, debugDirectories: debugDirectories)
            cache[key] = .loaded(symbols)
            return .success(symbols)
        } catch let error as ImageSymbolsError {
            cache[key] = .failed(error)
            return .failure(error)
        } catch {
            let failure = ImageSymbolsError.unreadable(path: image.path, reason: "\(error)")
            cache[key] = .failed(failure)
            return .failure(failure)
        }
    }
}
