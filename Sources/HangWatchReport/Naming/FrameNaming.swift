#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Names for frames as people read them: the short symbol when symbolicated, else the image file
/// name and offset.
public enum FrameNaming {
    /// `Pricing.recompute(for:)` (module dropped), else `app+0x1234`, else the address.
    public static func displayName(_ frame: HangReport.Frame, images: [HangReport.Image]) -> String {
        if let symbol = frame.symbol {
            return dropModule(SymbolName.short(symbol))
        }
        if let image = frame.image(in: images) {
            return StackSignature.baseName(image.path) + "+" + (frame.offset ?? frame.address)
        }
        return frame.address
    }

    /// `app.Pricing.recompute(for:)` -> `Pricing.recompute(for:)`: the module prefix of a Swift
    /// name (an identifier followed by a type name), when there is one.
    static func dropModule(_ name: String) -> String {
        guard let dot = name.firstIndex(of: ".") else { return name }
        let module = name[..<dot]
        let rest = name[name.index(after: dot)...]
        guard !module.isEmpty, module.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }),
            let first = rest.first, first.isUppercase
        else { return name }
        return String(rest)
    }

    /// Fits a frame name into `width` characters, dropping the least useful parts first: the
    /// argument labels, then the type, then characters at the end.
    public static func fit(_ name: String, width: Int) -> String {
        if name.count <= width { return name }
        // `f(x:) (async)`: the mark stays, the name before it is fitted.
        let mark = " (async)"
        if name.hasSuffix(mark), width > mark.count + 1 {
            return fit(String(name.dropLast(mark.count)), width: width - mark.count) + mark
        }
        var shorter = name
        if let open = shorter.firstIndex(of: "("), shorter.hasSuffix(")") {
            shorter = String(shorter[..<open]).trimmingWhitespace()
            if shorter.count <= width { return shorter }
        }
        if !shorter.contains(" "), let dot = shorter.lastIndex(of: ".") {
            shorter = String(shorter[shorter.index(after: dot)...])
            if shorter.count <= width { return shorter }
        }
        return width <= 1 ? String(shorter.prefix(width)) : String(shorter.prefix(width - 1)).trimmingWhitespace() + "…"
    }

    /// The heaviest stack's first app frame (the service's own code), else its first frame.
    public static func topAppFrame(_ report: HangReport) -> HangReport.Frame? {
        guard let frames = report.heaviestStack?.frames else { return nil }
        // A linker stub in the service's image is a call on its way to another image: not the service's code.
        return StackSignature.appFrames(frames, images: report.images).first { !($0.symbol.map(SymbolName.isLinkerStub) ?? false) }
            ?? frames.first
    }
}
