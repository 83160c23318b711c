import Foundation
import HangWatchTestSupport
import Testing

/// docs/architecture.md's module table is the packages' targets (`swift package dump-package` of
/// each of the three packages), each row's imports its target's dependencies on this repository's
/// modules, and each Swift target imports what it depends on (no arrow without an import, no
/// import without an arrow).
@Suite struct ModuleTableTests {
    static let root = CodeStructureTests.root
    static let packages = [".", "Tools", "Fuzz"]

    struct Target: Equatable {
        var name: String
        var directory: String
        var dependencies: Set<String>
        var isSwift: Bool
    }

    /// Every target of the three packages, with its dependencies on the repository's own modules.
    /// Each manifest is read in a scratch path of its own: a build of the package running beside the
    /// tests (make test builds the tools while these run) holds its `.build`'s lock for minutes.
    static func targets() throws -> [Target] {
        var raw: [(package: String, name: String, type: String, path: String?, dependencies: [String])] = []
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("module-table-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        for package in packages {
            let run = try ExecutableRun.run(
                "/usr/bin/env",
                ["swift", "package", "--package-path", root.appendingPathComponent(package).path,
                 "--scratch-path", scratch.appendingPathComponent(package == "." ? "root" : package).path, "dump-package"],
                timeout: 120)
            try #require(run.status == 0, "dump-package of \(package): \(run.errors)")
            let manifest = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
            for target in manifest["targets"] as? [[String: Any]] ?? [] {
                let dependencies = (target["dependencies"] as? [[String: Any]] ?? []).compactMap { dependency -> String? in
                    for key in ["byName", "target", "product"] {
                        if let value = dependency[key] as? [Any], let name = value.first as? String { return name }
                    }
                    return nil
                }
                raw.append((package, target["name"] as? String ?? "?", target["type"] as? String ?? "?", target["path"] as? String, dependencies))
            }
        }
        let ours = Set(raw.map(\.name))
        return raw.map { target in
            let folder = target.type == "test" ? "Tests" : "Sources"
            let directory = root.appendingPathComponent(target.package).appendingPathComponent(target.path ?? "\(folder)/\(target.name)").path
            let isSwift = target.type != "system" && (FileManager.default.enumerator(atPath: directory)?.contains { ($0 as? String)?.hasSuffix(".swift") == true } ?? false)
            return Target(name: target.name, directory: directory, dependencies: Set(target.dependencies).intersection(ours), isSwift: isSwift)
        }
    }

    /// The table's rows: module -> its imports.
    static func table() throws -> [String: Set<String>] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        var rows: [String: Set<String>] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 5 else { continue }
            let name = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let imports = cells[3] == "—" ? [] : cells[3].split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " `")) }
            #expect(rows[name] == nil, "\(name) has two rows")
            rows[name] = Set(imports)
        }
        return rows
    }

    @Test func theModuleTableIsThePackagesTargets() throws {
        let targets = try Self.targets()
        let table = try Self.table()
        #expect(targets.count > 40 && table.count > 40, "\(targets.count) targets, \(table.count) rows")
        #expect(Set(table.keys) == Set(targets.map(\.name)), "rows without a target: \(Set(table.keys).subtracting(targets.map(\.name)).sorted()); targets without a row: \(Set(targets.map(\.name)).subtracting(table.keys).sorted())")
        for target in targets {
            #expect(table[target.name] == target.dependencies, "\(target.name): the table says \(table[target.name]?.sorted() ?? []), the manifest \(target.dependencies.sorted())")
        }
    }

    /// Each Swift target imports each of the repository's modules it depends on, and no other.
    @Test func everyDependencyIsAnImport() throws {
        let targets = try Self.targets()
        let names = Set(targets.map(\.name))
        // Modules named differently from their target (a C target's module is its name).
        for target in targets where target.isSwift {
            var imported: Set<String> = []
            let walker = FileManager.default.enumerator(atPath: target.directory)
            while let path = walker?.nextObject() as? String {
                guard path.hasSuffix(".swift") else { continue }
                let text = try String(contentsOfFile: target.directory + "/" + path, encoding: .utf8)
                for line in text.split(separator: "\n") {
                    let words = line.split(separator: " ")
                    guard let index = words.firstIndex(of: "import"), index + 1 < words.count,
                        words[..<index].allSatisfy({ $0.hasPrefix("@") })
                    else { continue }
                    let module = String(words[index + 1])
                    if names.contains(module) { imported.insert(module) }
                }
            }
            // An executable target's name with dashes is no module another imports.
            let dependencies = target.dependencies.filter { !$0.contains("-") }
            #expect(imported == dependencies, "\(target.name) imports \(imported.sorted()), depends on \(dependencies.sorted())")
        }
    }
}

/// Every path of the repository the README, the CHANGELOG and docs/ name exists (a moved file
/// leaves no stale path behind); build products and the git-ignored version stamp are named as
/// what a build makes, and are left out.
@Suite struct DocumentedPathTests {
    @Test func everyPathTheDocsNameExists() throws {
        let root = CodeStructureTests.root
        let docs = root.appendingPathComponent("docs")
        let pages = ["README.md", "CHANGELOG.md"] + (try FileManager.default.contentsOfDirectory(atPath: docs.path)).filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        let pattern = try NSRegularExpression(pattern: #"(?<![\w/.])((?:Sources|Tools|Tests|scripts|config|systemd|packaging|Fuzz)/[A-Za-z0-9_+./-]*[A-Za-z0-9_])"#)
        var named = 0
        var missing: [String] = []
        for page in pages {
            let text = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range, in: text) else { continue }
                let path = String(text[range])
                if path.contains("/.build") || path.hasSuffix("MonitorVersion+Stamp.swift") { continue }
                named += 1
                if !FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path) { missing.append("\(page): \(path)") }
            }
        }
        #expect(named > 50, "\(named) paths found: the finder is broken")
        #expect(missing.isEmpty, "\(missing)")
    }
}
