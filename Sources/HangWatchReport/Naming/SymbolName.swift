/// Shorter forms of demangled names for display: argument labels instead of argument types, no
/// return types, no attributes. `static app.Pricing.recompute(for: Swift.Int) -> Swift.UInt64`
/// becomes `app.Pricing.recompute(for:)`. Reports keep the full name.
public enum SymbolName {
    /// The mark the symbolizer puts after a procedure linkage table entry's target: `f@plt` is the
    /// linker's stub that jumps to `f` (in another image), not code of the image it sits in.
    public static let linkerStubMark = "@plt"

    /// A procedure linkage table entry whose target is not known.
    public static let unknownLinkerStub = "PLT stub"

    /// A procedure linkage table entry: `f@plt`, or `PLT stub` when its target is unknown.
    public static func isLinkerStub(_ symbol: String) -> Bool {
        symbol.hasSuffix(linkerStubMark) || symbol == unknownLinkerStub
    }

    public static func short(_ name: String) -> String {
        // `f@plt`: the stub that jumps to f; f's short name, marked.
        if name.hasSuffix(linkerStubMark), name.count > linkerStubMark.count {
            return short(String(name.dropLast(linkerStubMark.count))) + " (PLT stub)"
        }
        var text = Substring(name)
        // `clock_nanosleep@GLIBC_2.2.5`, `memcpy@@GLIBC_2.14`: the symbol version says nothing
        // about where the time went.
        if let at = text.firstIndex(of: "@"), !text[..<at].isEmpty, !text[..<at].contains(where: { $0 == " " || $0 == "(" }) {
            text = text[..<at]
        }
        // `(1) suspend resume partial function for f`, `(2) await resume partial function for f`: a
        // part of async function f (the part number says nothing to a reader): `f (async)`.
        var suffix = ""
        if let partial = text.firstRange(of: "resume partial function for "),
            text[..<partial.lowerBound].hasSuffix("suspend ") || text[..<partial.lowerBound].hasSuffix("await ")
        {
            text = text[partial.upperBound...]
            suffix = " (async)"
        }
        // `merged ` stays: identical code folded into one function may be any of several names.
        // `function signature specialization <Arg[1] = Dead> of f`, `generic specialization <…> of
        // f`: a copy the optimizer made of f (release builds name most functions so); f is the name.
        var stripped = true
        while stripped {
            stripped = false
            for prefix in ["static ", "@objc ", "partial apply for ", "partial apply forwarder for ", "dispatch thunk of "]
            where text.hasPrefix(prefix) {
                text = text.dropFirst(prefix.count)
                stripped = true
            }
            for prefix in ["function signature specialization <", "generic specialization <"] where text.hasPrefix(prefix) {
                let open = text.index(text.startIndex, offsetBy: prefix.count - 1)
                if let close = matchingClose(in: text, from: open), text[text.index(after: close)...].hasPrefix(" of ") {
                    text = text[text.index(close, offsetBy: 5)...]
                    stripped = true
                }
            }
        }
        // `reabstraction thunk helper <A …> from … to …`: the runtime's glue between two function
        // types; the types say nothing about where the time went.
        for thunk in ["reabstraction thunk helper", "reabstraction thunk"] where text.hasPrefix(thunk + " ") {
            return "reabstraction thunk" + suffix
        }
        var output = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "(", text[index...].hasPrefix("(extension in "), let close = matchingClose(in: text, from: index),
                text[text.index(after: close)...].first == ":"
            {
                // `(extension in Hummingbird):Hummingbird.RouterMethods.f`: where the extension is
                // declared says nothing the qualified name after it does not.
                index = text.index(close, offsetBy: 2)
                continue
            }
            if character == "<", let last = output.last, last.isLetter || last.isNumber || last == "_",
                let close = matchingClose(in: text, from: index), text[text.index(after: close)...].first == "("
            {
                // `withLogger<A, B where B: Swift.Error>(…)`: a generic function's parameters, placeholders.
                index = text.index(after: close)
                continue
            }
            if character == "(" {
                // An argument list: keep the labels.
                guard let close = matchingClose(in: text, from: index) else {
                    output += text[index...]
                    break
                }
                let inside = text[text.index(after: index)..<close]
                if let privateName = privateName(inside) {
                    // `(invokeChannelRead in _9A0B1C2D)`: a private declaration's name, not arguments.
                    output += privateName
                    index = text.index(after: close)
                    continue
                }
                if !inside.isEmpty, inside.allSatisfy(\.isNumber) {
                    // `(1) suspend resume partial function for …`: an async function's part number.
                    output += "(" + inside + ")"
                    index = text.index(after: close)
                    continue
                }
                output += "(" + labels(String(inside)) + ")"
                index = text.index(after: close)
                // Drop effects (` async`, ` throws`) and a return type that follow.
                for effect in [" async", " throws", " rethrows"] where text[index...].hasPrefix(effect + " ") {
                    index = text.index(index, offsetBy: effect.count)
                }
                // A typed throw, `throws(B)`.
                if text[index...].hasPrefix(" throws("),
                    let close = matchingClose(in: text, from: text.index(index, offsetBy: " throws".count))
                {
                    index = text.index(after: close)
                }
                let rest = text[index...]
                if rest.hasPrefix(" -> ") {
                    index = endOfReturnType(in: text, from: text.index(index, offsetBy: 4))
                }
                continue
            }
            if text[index...].hasPrefix("closure #") {
                // "closure #1 @Sendable (T) -> () in f" -> "closure #1 in f"
                var cursor = text.index(index, offsetBy: 9)
                while cursor < text.endIndex, text[cursor].isNumber { cursor = text.index(after: cursor) }
                output += text[index..<cursor]
                if let inRange = text[cursor...].firstRange(of: " in ") {
                    output += " in "
                    index = inRange.upperBound
                    // `closure #1 in static app.T.f()`: the closure's function, named as any other.
                    if text[index...].hasPrefix("static ") { index = text.index(index, offsetBy: "static ".count) }
                } else {
                    index = cursor
                }
                continue
            }
            output.append(character)
            index = text.index(after: index)
        }
        return output + suffix
    }

    /// `name in _9A0B1C2D` (a private declaration and its file discriminator): the name.
    private static func privateName(_ text: Substring) -> Substring? {
        guard let range = text.firstRange(of: " in _"), !text[..<range.lowerBound].isEmpty,
            text[..<range.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }),
            text[range.upperBound...].allSatisfy({ $0.isHexDigit }), !text[range.upperBound...].isEmpty
        else { return nil }
        return text[..<range.lowerBound]
    }

    /// The bracket that closes the `(` or `<` at `open` (brackets inside counted, the `>` of a
    /// function type's arrow not), or nil when another kind closes it first.
    private static func matchingClose(in text: Substring, from open: Substring.Index) -> Substring.Index? {
        let wanted: Character = text[open] == "<" ? ">" : ")"
        var depth = 0
        var index = open
        while index < text.endIndex {
            if text[index] == ">", index > open, text[text.index(before: index)] == "-" {
                index = text.index(after: index)
                continue
            }
            switch text[index] {
            case "(", "<", "[": depth += 1
            case ")", ">", "]":
                depth -= 1
                if depth == 0 { return text[index] == wanted ? index : nil }
            default: break
            }
            index = text.index(after: index)
        }
        return nil
    }

    private static func endOfReturnType(in text: Substring, from start: Substring.Index) -> Substring.Index {
        var depth = 0
        var index = start
        while index < text.endIndex {
            switch text[index] {
            case "(", "<", "[": depth += 1
            case ")", ">", "]":
                if depth == 0 { return index }
                depth -= 1
            case " " where depth == 0:
                return index
            default: break
            }
            index = text.index(after: index)
        }
        return index
    }

    /// "label: Type, _: Type, Type" -> "label:_:_:"
    private static func labels(_ arguments: String) -> String {
        guard !arguments.isEmpty else { return "" }
        var parts: [Substring] = []
        var depth = 0
        var start = arguments.startIndex
        for index in arguments.indices {
            // The `>` of a function type's arrow closes nothing.
            if arguments[index] == ">", index > arguments.startIndex, arguments[arguments.index(before: index)] == "-" { continue }
            switch arguments[index] {
            case "(", "<", "[": depth += 1
            case ")", ">", "]": depth -= 1
            case "," where depth == 0:
                parts.append(arguments[start..<index])
                start = arguments.index(after: index)
            default: break
            }
        }
        parts.append(arguments[start...])
        return parts.map { part -> String in
            let trimmed = part.drop { $0 == " " }
            // A label is a name and one colon (`swift::AsyncContext*` is a C++ type, not a label).
            if let colon = trimmed.firstIndex(of: ":"), !trimmed[..<colon].contains(where: { $0 == " " || $0 == "." || $0 == "(" }),
                trimmed[trimmed.index(after: colon)...].first != ":"
            {
                return String(trimmed[..<colon]) + ":"
            }
            return "_:"
        }.joined()
    }
}
