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

    private static func describe(_ error: Error) -> String {
        guard let decodingError = error as? DecodingError else { return "\(error)" }
        func path(_ codingPath: [CodingKey]) -> String {
            codingPath.isEmpty ? "top level" : codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch decodingError {
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(type): \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)): missing \(type) value"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): missing field"
        case .dataCorrupted(let context):
            let underlying = context.underlyingError.map { String(describing: $0) }
            return "\(path(context.codingPath)): \(context.debugDescription)\(underlying.map { " (\($0))" } ?? "")"
        @unknown default:
            return "\(decodingError)"
        }
    }
}
