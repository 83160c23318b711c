import Foundation
import HangWatchTestSupport
import Testing

/// The shape the code keeps (docs/architecture.md): C split by concern into small files that call
/// each other in one direction only, one Swift file that talks to the C target, `errno` read in
/// one place, one `@_spi` (HangWatchReport's, for the tools' package), the agent in small files.
@Suite struct CodeStructureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let cDirectory = root.appendingPathComponent("Sources/CHangWatchCapture")

    static func cFiles() throws -> [(name: String, text: String)] {
        try FileManager.default.contentsOfDirectory(atPath: cDirectory.path).filter { $0.hasSuffix(".c") }.sorted().map {
            ($0, try String(contentsOf: cDirectory.appendingPathComponent($0), encoding: .utf8))
        }
    }

    /// Functions a file defines at file scope (`name(` at the start of a line, after the return type).
    static func definitions(in text: String) -> Set<String> {
        var names: Set<String> = []
        for line in text.split(separator: "\n") where !line.hasPrefix(" ") && !line.hasPrefix("#") && !line.hasPrefix("/") {
            guard let open = line.firstIndex(of: "("), !line.contains(";") || line.hasSuffix("{") else { continue }
            if let name = line[..<open].split(whereSeparator: { $0 == " " || $0 == "*" }).last, name.hasPrefix("hw_") {
                names.insert(String(name))
            }
        }
        return names
    }

    /// Names of `hw_` functions a file calls.
    static func calls(in text: String) -> Set<String> {
        var names: Set<String> = []
        var rest = text[...]
        while let range = rest.range(of: "hw_") {
            var end = range.upperBound
            while end < rest.endIndex, rest[end].isLetter || rest[end].isNumber || rest[end] == "_" { end = rest.index(after: end) }
            if end < rest.endIndex, rest[end] == "(" { names.insert(String(rest[range.lowerBound..<end])) }
            rest = rest[end...]
        }
        return names
    }

    @Test func everyCFileIsUnder350Lines() throws {
        for file in try Self.cFiles() {
            let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false).count
            #expect(lines < 350, "\(file.name): \(lines) lines")
        }
    }

    @Test func cFilesCallEachOtherInOneDirectionOnly() throws {
        let files = try Self.cFiles()
        var owner: [String: String] = [:]
        for file in files {
            for name in Self.definitions(in: file.text) { owner[name] = file.name }
        }
        #expect(owner["hw_rules_step"] == "hw_rules.c", "the definition finder is broken: \(owner.count) functions found")
        var edges: [String: Set<String>] = [:]
        for file in files {
            edges[file.name] = Set(Self.calls(in: file.text).compactMap { owner[$0] }.filter { $0 != file.name })
        }
        // Depth-first search for a cycle.
        var state: [String: Int] = [:]  // 1 visiting, 2 done
        func visit(_ file: String, _ path: [String]) -> [String]? {
            if state[file] == 1 { return path + [file] }
            if state[file] == 2 { return nil }
            state[file] = 1
            for next in edges[file, default: []].sorted() {
                if let cycle = visit(next, path + [file]) { return cycle }
            }
            state[file] = 2
            return nil
        }
        let cycle = files.lazy.compactMap { visit($0.name, []) }.first
        #expect(cycle == nil, "call cycle: \(cycle?.joined(separator: " -> ") ?? "")")
    }

    @Test func oneSwiftFileImportsTheCTarget() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let enumerator = FileManager.default.enumerator(atPath: sources.path)
        var importers: [String] = []
        while let path = enumerator?.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            let text = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
            if text.split(separator: "\n").contains(where: { $0.trimmingCharacters(in: .whitespaces).hasSuffix("import CHangWatchCapture") }) {
                importers.append(path)
            }
        }
        #expect(importers == ["HangWatch/Capture/UnsafeCaptureBridge.swift"])
    }

    /// Swift source files of the library's package (by path under Sources/) and of the tools'
    /// (under Tools/Sources/, as `Tools/…`).
    static func swiftSources() throws -> [(path: String, text: String)] {
        var files: [(String, String)] = []
        for (folder, prefix) in [("Sources", ""), ("Tools/Sources", "Tools/")] {
            let sources = Self.root.appendingPathComponent(folder)
            let enumerator = FileManager.default.enumerator(atPath: sources.path)
            while let path = enumerator?.nextObject() as? String {
                guard path.hasSuffix(".swift") else { continue }
                files.append((prefix + path, try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)))
            }
        }
        return files.sorted { $0.0 < $1.0 }
    }

    /// `errno` becomes a Swift error in one place (`SystemCall`); the stack corpus, the
    /// Hummingbird service and its bench and the Vapor service, programs that make system calls on
    /// purpose to be captured in them (or to load a server), count their own interruptions and failures.
    @Test func errnoIsReadInOnePlace() throws {
        let readers = try Self.swiftSources().filter { file in
            file.text.split(separator: "\n").contains { line in
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                return code.range(of: #"\berrno\b(?!:)"#, options: .regularExpression) != nil
            }
        }.map(\.path)
        #expect(
            readers == [
                "HangWatchReport/System/SystemCall.swift", "Tools/hangwatch-hummingbird-bench/Bench.swift",
                "Tools/hangwatch-hummingbird-service/Routes.swift", "Tools/hangwatch-vapor-service/Routes.swift",
                "hangwatch-stackcorpus/Cases.swift",
            ], "\(readers)")
    }

    /// Targets of one package share through `package` access. Across the two packages, what the
    /// tools need of HangWatchReport beyond its API (`SystemCall`, `PathText`, `HexText`, the
    /// atomic write) is `@_spi(Internal)`, the one SPI, declared in HangWatchReport only.
    @Test func theOneSPIIsHangWatchReportsInternal() throws {
        let files = try Self.swiftSources()
        let declaring = files.filter { $0.text.contains("@_spi(Internal) public") }.map(\.path)
        #expect(!declaring.isEmpty && declaring.allSatisfy { $0.hasPrefix("HangWatchReport/") }, "\(declaring)")
        let other = files.filter { file in
            file.text.split(separator: "\n").contains { $0.contains("@_spi(") && !$0.contains("@_spi(Internal)") }
        }.map(\.path)
        #expect(other.isEmpty, "\(other)")
        let importers = files.filter { $0.text.contains("@_spi(Internal) import") }
        #expect(importers.allSatisfy { $0.text.contains("@_spi(Internal) import HangWatchReport") }, "\(importers.map(\.path))")
    }

    /// The agent stays small services: no file over ~300 lines.
    @Test func agentFilesStaySmall() throws {
        for file in try Self.swiftSources() where file.path.hasPrefix("Tools/HangWatchAgent/") {
            let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false).count
            #expect(lines <= 320, "\(file.path): \(lines) lines")
        }
    }
}
