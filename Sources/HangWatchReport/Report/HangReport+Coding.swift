#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension HangReport {
    /// The encoder every writer uses: sorted keys, pretty printed, RFC 3339 millisecond dates.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ReportTimestamp.format(date))
        }
        encoder.nonConformingFloatEncodingStrategy = .throw
        return encoder
    }

    /// The decoder every reader uses; accepts any RFC 3339 timestamp.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = ReportTimestamp.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "not an RFC 3339 timestamp: \(text.prefix(64))")
            }
            return date
        }
        return decoder
    }

    /// Whether this library can read reports of `schema`: same family and major version.
    public static func isSupported(schema: String) -> Bool {
        schema == majorSchema || schema.hasPrefix(majorSchema + ".")
    }

    /// The report as JSON bytes.
    public func encoded() throws -> Data {
        try Self.makeEncoder().encode(self)
    }

    /// Decodes a report, rejecting schemas this library does not understand.
    public static func decode(_ data: Data) throws -> HangReport {
        struct SchemaProbe: Decodable { var schema: String }
        // JSON is UTF-8; the decoder would quietly accept some invalid sequences inside strings.
        if let offset = firstInvalidUTF8(in: data) {
            throw ReportReadError.malformed("byte \(offset) is not UTF-8 text")
        }
        let decoder = makeDecoder()
        let probe: SchemaProbe
        do {
            probe = try decoder.decode(SchemaProbe.self, from: data)
        } catch {
            throw ReportReadError.malformed(describe(error))
        }
        guard isSupported(schema: probe.schema) else {
            throw ReportReadError.unsupportedSchema(probe.schema)
        }
        do {
            return try decoder.decode(HangReport.self, from: data)
        } catch {
            throw ReportReadError.malformed(describe(error))
        }
    }

    /// The offset of the first byte that is not part of a valid UTF-8 sequence, if any.
    static func firstInvalidUTF8(in data: Data) -> Int? {
        // ASCII is most of a report: skip it without decoding.
        guard data.contains(where: { $0 >= 0x80 }) else { return nil }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = data.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// A decoding error in a report's terms: which field (its path in the report, `frames[3].address`)
    /// and what is wrong with it, in JSON's words (`a number`, `a string`), never Swift's types.
    static func describe(_ error: Error) -> String {
        guard let decodingError = error as? DecodingError else { return "\(error)" }
        switch decodingError {
        case .typeMismatch(let type, let context):
            let found = foundKind(in: context.debugDescription).map { "is \($0) where \(jsonKind(type)) is expected" } ?? "is not \(jsonKind(type))"
            return context.codingPath.isEmpty ? "the top level \(found)" : "field \(field(context.codingPath)) \(found)"
        case .valueNotFound(let type, let context):
            return "field \(field(context.codingPath)) is null where \(jsonKind(type)) is expected"
        case .keyNotFound(let key, let context):
            return "missing field \(field(context.codingPath + [key]))"
        case .dataCorrupted(let context):
            guard !context.codingPath.isEmpty else { return "not JSON" + (context.underlyingError.map { ": \(firstSentence($0))" } ?? "") }
            return "field \(field(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(decodingError)"
        }
    }

    /// `"frames[3].address"`: a field's path in the report, quoted.
    static func field(_ codingPath: [CodingKey]) -> String {
        var path = ""
        for key in codingPath {
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path += (path.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return "\"\(path)\""
    }

    /// What JSON calls a value of `type`.
    static func jsonKind(_ type: Any.Type) -> String {
        let name = String(describing: type)
        if type == String.self || type == Substring.self { return "a string" }
        if type == Bool.self { return "true or false" }
        if type is any BinaryInteger.Type || type is any BinaryFloatingPoint.Type { return "a number" }
        if name.hasPrefix("Dictionary") || name.hasPrefix("[String") { return "an object" }
        if name.hasPrefix("Array") || name.hasPrefix("[") { return "an array" }
        return "an object"
    }

    /// `a string` from the decoder's `Expected to decode Double but found a string instead.`
    static func foundKind(in description: String) -> String? {
        guard let start = description.firstRange(of: "but found "), let end = description[start.upperBound...].firstRange(of: " instead") else {
            return nil
        }
        let kind = description[start.upperBound..<end.lowerBound]
        return kind == "a dictionary" ? "an object" : String(kind)
    }

    /// The first sentence of an underlying JSON error (`Unexpected end of file`), without its
    /// domain or code.
    static func firstSentence(_ error: any Error) -> String {
        let sentence = String(describing: error).prefix { $0 != "." && $0 != "\n" && $0 != "(" }.trimmingWhitespace()
        return sentence.isEmpty ? "unreadable" : sentence.prefix(1).lowercased() + sentence.dropFirst()
    }
}
