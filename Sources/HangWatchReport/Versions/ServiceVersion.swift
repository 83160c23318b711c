#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Which release of the monitored service wrote a report: its version, and where the monitor
/// found it. Written into every hang report as `serviceVersion` (docs/report-format.md), published
/// in the heartbeat (the agent labels its metrics with it), and what `hangwatch diff` compares.
///
/// Found once, when the monitor starts, in this order (`resolve`):
/// 1. `HangMonitor.Configuration.serviceVersion`, set by the service's code;
/// 2. `HANGWATCH_SERVICE_VERSION`;
/// 3. `service.version` in `OTEL_RESOURCE_ATTRIBUTES` (OpenTelemetry's own variable: a service
///    that already tells its tracer its version tells HangWatch too);
/// 4. the main executable's ELF build-id, `build-` and its first 12 hex digits (a build is a
///    release nobody named).
public struct ServiceVersion: Codable, Sendable, Equatable, Hashable {
    /// Where the version came from.
    public enum Source: String, Codable, Sendable, Equatable, Hashable {
        case configuration
        case environment = "HANGWATCH_SERVICE_VERSION"
        case openTelemetry = "OTEL_RESOURCE_ATTRIBUTES"
        case buildID = "build-id"
    }

    /// At most this many bytes are kept (the heartbeat's field holds them; a longer value is cut
    /// at a character boundary).
    public static let maxBytes = 64

    public var version: String
    public var source: Source

    public init(version: String, source: Source) {
        self.version = Self.bounded(version)
        self.source = source
    }

    /// The version by the order above; nil only when every source is empty or absent (no
    /// configuration, no variables, an executable without a build-id).
    public static func resolve(
        configured: String?, environment: [String: String], buildID: () -> String?
    ) -> ServiceVersion? {
        if let value = usable(configured) { return ServiceVersion(version: value, source: .configuration) }
        if let value = usable(environment["HANGWATCH_SERVICE_VERSION"]) {
            return ServiceVersion(version: value, source: .environment)
        }
        if let attributes = environment["OTEL_RESOURCE_ATTRIBUTES"],
            let value = usable(resourceAttributes(attributes)["service.version"])
        {
            return ServiceVersion(version: value, source: .openTelemetry)
        }
        if let id = buildID(), !id.isEmpty { return ServiceVersion(version: "build-" + id.prefix(12), source: .buildID) }
        return nil
    }

    /// This process's version by the order above: `configured`, then its environment, then
    /// `/proc/self/exe`'s build-id.
    public static func ofThisProcess(configured: String?) -> ServiceVersion? {
        resolve(configured: configured, environment: ProcessInfo.processInfo.environment) {
            ExecutableBuildID.read(path: "/proc/self/exe")
        }
    }

    /// `OTEL_RESOURCE_ATTRIBUTES` as the OpenTelemetry SDK specification reads it: `key=value`
    /// pairs separated by commas, values percent-encoded, surrounding spaces ignored. A pair
    /// without `=` or with an empty key is skipped; a later pair wins over an earlier one.
    public static func resourceAttributes(_ text: String) -> [String: String] {
        var attributes: [String: String] = [:]
        for pair in text.split(separator: ",", omittingEmptySubsequences: true) {
            guard let equals = pair.firstIndex(of: "=") else { continue }
            let key = pair[..<equals].trimmingSpaces()
            guard !key.isEmpty else { continue }
            let value = pair[pair.index(after: equals)...].trimmingSpaces()
            attributes[key] = percentDecoded(value) ?? value
        }
        return attributes
    }

    /// Control characters dropped, surrounding spaces trimmed, at most `maxBytes` bytes.
    static func bounded(_ text: String) -> String {
        var kept = ""
        var bytes = 0
        for character in text.trimmingSpaces() where !character.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) {
            let size = String(character).utf8.count
            guard bytes + size <= maxBytes else { break }
            kept.append(character)
            bytes += size
        }
        return kept
    }

    private static func usable(_ text: String?) -> String? {
        guard let text else { return nil }
        let value = bounded(text)
        return value.isEmpty ? nil : value
    }

    /// `%XX` sequences decoded as UTF-8; nil when a sequence is malformed or the bytes are not UTF-8.
    private static func percentDecoded(_ text: String) -> String? {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard utf8.count >= 2, let high = hexValue(utf8[utf8.startIndex]),
                let low = hexValue(utf8[utf8.startIndex + 1])
            else { return nil }
            bytes.append(high << 4 | low)
            utf8 = utf8.dropFirst(2)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> String {
        var scalars = Substring(self).unicodeScalars[...]
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}
