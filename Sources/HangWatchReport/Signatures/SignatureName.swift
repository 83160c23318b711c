/// A frame's name as the name signature counts it (`StackSignature.computeByNames`): what stays the
/// same when unchanged code is built again, by another build, host or Swift minor version.
///
/// Starting from the display form (`SymbolName.short`: argument labels without types, no return
/// type, no file discriminator of private names, no `static`/`@objc`/`partial apply for`/`dispatch
/// thunk of`, no `generic specialization <…> of` / `function signature specialization <…> of`):
/// - an async function's parts are the function (`(2) await resume partial function for f` → `f`);
/// - `merged f` is `f` (identical code folded into one function carries one of its names; another
///   build may fold the other way: documented as a limit);
/// - `protocol witness for P.f() in conformance T : P in M` is `T.f()`, the method it runs (a call
///   the optimizer devirtualizes in another build has no witness frame, just `T.f()`);
/// - the suffixes compilers give clones of C functions (`.cold`, `.part.N`, `.isra.N`,
///   `.constprop.N`, `.llvm.<hash>`) go;
/// - glue never counts (nil): reabstraction thunks (`thunk for …` too), outlined copies
///   (`outlined copy of …`), linker stubs (`f@plt`, `PLT stub`).
///
/// Closure numbers stay: `closure #2 in f` is the second closure written in `f`, so its number
/// changes only when `f` itself changes, and two closures of one function never share a name.
public enum SignatureName {
    /// The name counted for `symbol`; nil for glue that never counts.
    public static func normalize(_ symbol: String) -> String? {
        if SymbolName.isLinkerStub(symbol) { return nil }
        var text = Substring(symbol)
        // `f@GLIBC_2.2.5`, `f@@GLIBC_2.14`: the symbol version (SymbolName drops it too; done here
        // before the clone suffixes, which come before it).
        if let at = text.firstIndex(of: "@"), !text[..<at].isEmpty, !text[..<at].contains(where: { $0 == " " || $0 == "(" }) {
            text = text[..<at]
        }
        text = withoutCloneSuffix(text)
        if let witness = witnessTarget(text) { text = Substring(witness) }
        var name = SymbolName.short(String(text))
        let asyncMark = " (async)"
        if name.hasSuffix(asyncMark) { name.removeLast(asyncMark.count) }
        while name.hasPrefix("merged ") { name.removeFirst("merged ".count) }
        let glue = ["reabstraction thunk", "thunk for ", "outlined "]
        if glue.contains(where: { name.hasPrefix($0) }) { return nil }
        return name.isEmpty ? nil : name
    }

    /// `f.cold`, `f.part.0`, `f.isra.0`, `f.constprop.0`, `f.llvm.1234567890` -> `f` (repeated:
    /// `f.constprop.0.isra.0`).
    static func withoutCloneSuffix(_ name: Substring) -> Substring {
        var text = name
        while let dot = text.lastIndex(of: "."), dot > text.startIndex {
            let suffix = text[text.index(after: dot)...]
            let before = text[..<dot]
            if suffix == "cold" {
                text = before
            } else if !suffix.isEmpty, suffix.allSatisfy(\.isNumber), let inner = before.lastIndex(of: "."),
                ["part", "isra", "constprop", "llvm", "lto_priv", "cold"].contains(before[before.index(after: inner)...])
            {
                text = before[..<inner]
            } else {
                break
            }
        }
        return text
    }

    /// `protocol witness for app.P.f(x: Swift.Int) -> () in conformance app.T : app.P in app` ->
    /// `app.T.f(x: Swift.Int) -> ()`; nil when `name` is no witness.
    static func witnessTarget(_ name: Substring) -> String? {
        let prefix = "protocol witness for "
        guard name.hasPrefix(prefix), let conformance = name.firstRange(of: " in conformance ") else { return nil }
        let requirement = name[name.index(name.startIndex, offsetBy: prefix.count)..<conformance.lowerBound]
        let rest = name[conformance.upperBound...]
        guard let colon = rest.firstRange(of: " : ") else { return nil }
        let type = rest[..<colon.lowerBound]
        // The requirement's own name: after the last dot before its argument list.
        let head = requirement.firstIndex(of: "(").map { requirement[..<$0] } ?? requirement
        guard let dot = head.lastIndex(of: ".") else { return nil }
        return String(type) + String(requirement[dot...])
    }
}
