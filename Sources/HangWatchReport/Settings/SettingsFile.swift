#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A settings file in the format of a systemd `EnvironmentFile`: `KEY=VALUE` lines, `#` and `;`
/// comments, an optional `export `, optional matching quotes around the value. The same file can be
/// given to systemd and read by the monitor or the agent.
public enum SettingsFile {
    /// One `KEY=VALUE` line; `line` is 1-based (0: not from a file).
    public struct Setting: Sendable, Equatable {
        public var key: String
        public var value: String
        public var line: Int

        public init(key: String, value: String, line: Int) {
            self.key = key
            self.value = value
            self.line = line
        }
    }

    public struct ReadError: Error, CustomStringConvertible, Equatable {
        public var path: String
        public var reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// The settings in the file at `path` (at most 1 MiB), in order.
    public static func read(_ path: String) throws -> [Setting] {
        let data: Data
        do {
            data = try ReportReader(maxBytes: 1 << 20, refusesHardLinks: false).readData(path: path)
        } catch ReportReadError.notFound {
            throw ReadError(path: path, reason: "no such file")
        } catch let error as ReportReadError {
            throw ReadError(path: path, reason: "\(error)".replacing(path + ": ", with: ""))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ReadError(path: path, reason: "not UTF-8 text")
        }
        return try parse(text, path: path)
    }

    public static func parse(_ text: String, path: String) throws -> [Setting] {
        var settings: [Setting] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ReadError(path: path, reason: "line \(index + 1): expected KEY=VALUE, found \"\(line.prefix(80))\"")
            }
            var key = line[..<equals].trimmingWhitespace()
            if key.hasPrefix("export ") { key = String(key.dropFirst(7)).trimmingWhitespace() }
            var value = line[line.index(after: equals)...].trimmingWhitespace()
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
            }
            settings.append(Setting(key: key, value: value, line: index + 1))
        }
        return settings
    }
}
