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

    /// Its headers too (the public one is an umbrella over a header per concern).
    @Test func everyCFileAndHeaderIsUnder350Lines() throws {
        let include = Self.cDirectory.appendingPathComponent("include")
        let headers = try FileManager.default.contentsOfDirectory(atPath: include.path).filter { $0.hasSuffix(".h") }.map {
            ("include/" + $0, try String(contentsOf: include.appendingPathComponent($0), encoding: .utf8))
        }
        let privateHeaders = try FileManager.default.contentsOfDirectory(atPath: Self.cDirectory.path).filter { $0.hasSuffix(".h") }.map {
            ($0, try String(contentsOf: Self.cDirectory.appendingPathComponent($0), encoding: .utf8))
        }
        let files = try Self.cFiles() + headers + privateHeaders
        #expect(files.count > 20 && headers.count > 1, "\(files.map { $0.0 })")
        for file in files {
            let lines = file.1.split(separator: "\n", omittingEmptySubsequences: false).count
            #expect(lines < 350, "\(file.0): \(lines) lines")
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

    /// Only `HangWatch/Bridge/` talks to the C target, a file per concern (capture and the blocked
    /// walk, the image table, the heartbeat page and loop histogram, the clock, wakes, dump
    /// requests, pool hooks, affinity), each with `Unsafe` in its name.
    @Test func onlyTheBridgeImportsTheCTarget() throws {
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
        #expect(!importers.isEmpty && importers.allSatisfy { $0.hasPrefix("HangWatch/Bridge/") }, "\(importers)")
        let bridge = try FileManager.default.contentsOfDirectory(atPath: sources.appendingPathComponent("HangWatch/Bridge").path)
        #expect(bridge.allSatisfy { $0.hasPrefix("Unsafe") && $0.hasSuffix(".swift") }, "\(bridge)")
        #expect(Set(bridge) == Set(importers.map { ($0 as NSString).lastPathComponent }), "every bridge file talks to the C target: \(bridge)")
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

    /// The `hangwatch` target keeps the commands only: every type it declares is a command, a group
    /// of options or an argument's type (its logic is in HangWatchReading, HangWatchRendering,
    /// HangWatchDumpChannel, tested there), and its tests reach nothing of it with `@testable`
    /// but the commands' definitions (DurationOptionTests walks them).
    @Test func theCLITargetHoldsCommandsOnly() throws {
        let cli = try Self.swiftSources().filter { $0.path.hasPrefix("Tools/hangwatch/") }
        #expect(cli.count > 10)
        var other: [String] = []
        for file in cli {
            for line in file.text.split(separator: "\n") where line.range(of: #"^(struct|enum|final class|class|actor) "#, options: .regularExpression) != nil {
                let kinds = ["ParsableCommand", "ParsableArguments", "ExpressibleByArgument"]
                if !kinds.contains(where: { line.contains(": \($0)") || line.contains(", \($0)") }) { other.append("\(file.path): \(line)") }
            }
        }
        #expect(other.isEmpty, "\(other)")
        let tests = Self.root.appendingPathComponent("Tools/Tests/hangwatchTests")
        let testable = try FileManager.default.contentsOfDirectory(atPath: tests.path).filter { name in
            guard name.hasSuffix(".swift") else { return false }
            return try String(contentsOf: tests.appendingPathComponent(name), encoding: .utf8).contains("@testable import hangwatch")
        }
        #expect(testable == ["DurationOptionTests.swift"], "\(testable)")
    }

    /// A module is imported once per file (nine files imported Glibc twice).
    @Test func noFileImportsAModuleTwice() throws {
        let files = try Self.swiftSources()
        #expect(files.count > 300)
        var twice: [String] = []
        for file in files {
            let imports = file.text.split(separator: "\n").compactMap { line -> String? in
                let words = line.split(separator: " ")
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count else { return nil }
                return words[..<index].allSatisfy { $0.hasPrefix("@") } ? String(words[index + 1]) : nil
            }
            if Set(imports).count != imports.count { twice.append(file.path) }
        }
        #expect(twice.isEmpty, "\(twice)")
    }

    /// `errno` becomes a Swift error in one place (`SystemCall`); the stack corpus, the
    /// Hummingbird service and its bench, the Vapor service and what the two services share,
    /// programs that make system calls on purpose to be captured in them (or to load a server),
    /// count their own interruptions and failures.
    @Test func errnoIsReadInOnePlace() throws {
        let readers = try Self.swiftSources().filter { file in
            file.text.split(separator: "\n").contains { line in
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                return code.range(of: #"\berrno\b(?!:)"#, options: .regularExpression) != nil
            }
        }.map(\.path)
        #expect(
            readers == [
                "HangWatchReport/System/SystemCall.swift", "Tools/ServiceHarness/Measurements.swift", "Tools/ServiceHarness/PipeWait.swift",
                "Tools/hangwatch-hummingbird-bench/Bench.swift", "Tools/hangwatch-hummingbird-service/Routes.swift",
                "hangwatch-stackcorpus/Cases.swift",
            ], "\(readers)")
    }

    /// Targets of one package share through `package` access. Across the two packages, what the
    /// tools need of HangWatchReport beyond its API (`SystemCall`, `PathText`, `HexText`, the
    /// atomic write) is `@_spi(Internal)`, the one SPI, declared in HangWatchReport only.
    /// Production code carries no function made for the tests (they reach what they need through
    /// `package` access or their own extensions).
    @Test func noTestOnlyHookIsInTheSources() throws {
        let hooks = try Self.swiftSources().filter { file in
            file.text.range(of: #"func [A-Za-z]*(ForTesting|ForTests|ForTest)\b"#, options: .regularExpression) != nil
        }.map(\.path)
        #expect(hooks.isEmpty, "\(hooks)")
    }

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

    /// The functions (`func`, `init`, `deinit`) a Swift file defines, each with its first line and
    /// its length in lines, from the declaration to the brace that closes its body. Strings and
    /// `//` comments are left out of the brace count; a declaration without a body (a protocol's
    /// requirement) is none.
    static func functionLengths(in text: String) -> [(name: String, line: Int, lines: Int)] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var found: [(name: String, line: Int, lines: Int)] = []
        for (index, line) in lines.enumerated() {
            guard let name = declaredFunction(line) else { continue }
            var depth = 0
            var opened = false
            var end = index
            scan: while end < lines.count {
                let code = Self.code(lines[end])
                if end > index, !opened, code.trimmingCharacters(in: .whitespaces).isEmpty || declaredFunction(lines[end]) != nil {
                    break scan
                }
                for character in code {
                    if character == "{" {
                        depth += 1
                        opened = true
                    } else if character == "}" {
                        depth -= 1
                        if !opened { break scan }
                        if depth == 0 {
                            found.append((name, index + 1, end - index + 1))
                            break scan
                        }
                    }
                }
                end += 1
            }
        }
        return found
    }

    /// The name of the function a line declares (`func name`, `init`, `deinit`), after its
    /// attributes and modifiers; nil for any other line.
    static func declaredFunction(_ line: String) -> String? {
        let modifiers: Set<Substring> = [
            "public", "package", "internal", "private", "fileprivate", "static", "class", "final", "override", "mutating",
            "nonmutating", "nonisolated", "convenience", "required", "consuming", "borrowing",
        ]
        var words = line.split(separator: " ")[...]
        while let first = words.first, first.hasPrefix("@") || modifiers.contains(first) { words = words.dropFirst() }
        guard let keyword = words.first else { return nil }
        if keyword == "func", let name = words.dropFirst().first { return String(name.prefix { $0 != "(" && $0 != "<" }) }
        if keyword == "deinit" || keyword.hasPrefix("init(") || keyword.hasPrefix("init?(") || keyword.hasPrefix("init<")
            || keyword.hasPrefix("init!(")
        {
            return keyword.hasPrefix("deinit") ? "deinit" : "init"
        }
        return nil
    }

    /// A line's code: string literals emptied, a `//` comment cut off.
    static func code(_ line: String) -> String {
        var code = ""
        var inString = false
        var escaped = false
        var previous: Character = " "
        for character in line {
            if inString {
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inString = false
                    code.append(character)
                }
                continue
            }
            if character == "/", previous == "/" {
                code.removeLast()
                break
            }
            if character == "\"" { inString = true }
            code.append(character)
            previous = character
        }
        return code
    }

    /// Deciding is not doing (STYLE.md): a function past ~80 lines is usually both. None in the
    /// embeddable library passes 80.
    @Test func noFunctionInTheLibraryPasses80Lines() throws {
        let library = try Self.swiftSources().filter { $0.path.hasPrefix("HangWatch/") }
        var long: [String] = []
        var measured = 0
        for file in library {
            for function in Self.functionLengths(in: file.text) {
                measured += 1
                if function.lines > 80 { long.append("\(file.path):\(function.line) \(function.name): \(function.lines) lines") }
            }
        }
        // The finder itself: it must see the library's functions, the sampler's among them.
        let sampler = library.first { $0.path == "HangWatch/Capture/LinuxStackSampler.swift" }
        let samplerFunctions = sampler.map { Self.functionLengths(in: $0.text) } ?? []
        #expect(measured > 300 && samplerFunctions.contains { $0.name == "sample" && $0.lines > 40 }, "the function finder is broken: \(measured) found")
        #expect(long.isEmpty, "\(long)")
    }

    /// The source seam does not leak: what a source can do beyond the common lifecycle is kept
    /// typed by the `start…` that made it (`HangMonitor.SourceHandles`), never found by a downcast.
    @Test func noActivitySourceIsDowncast() throws {
        let downcasts = try Self.swiftSources().filter { !$0.path.hasPrefix("Tools/") }.flatMap { file in
            file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line -> String? in
                let code = Self.code(String(line))
                guard code.range(of: #"\bas[?!]\s*\(?\s*(any\s+)?\w*ActivitySource\b"#, options: .regularExpression) != nil else { return nil }
                return "\(file.path):\(index + 1)"
            }
        }
        #expect(downcasts.isEmpty, "\(downcasts)")
    }

    /// One timer: the monitor's timed work (hang lanes, a queue's pings, the pool watch) runs as
    /// lanes of the watchdog (`WatchdogLane`), and the only other thread the library starts is the
    /// event-loop watcher's (it waits on epoll). A new thread anywhere else fails here.
    @Test func onlyTheWatchdogAndTheLoopWatcherStartThreads() throws {
        let starters = try Self.swiftSources().filter { $0.path.hasPrefix("HangWatch/") }.flatMap { file in
            file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line -> String? in
                let code = Self.code(String(line))
                guard code.range(of: #"NamedThread\.start\(|OnDemandThread(<[^>]*>)?\(name:|\bThread\s*\{|pthread_create"#, options: .regularExpression) != nil
                else { return nil }
                return file.path
            }
        }
        #expect(
            Set(starters) == [
                "HangWatch/Detection/Watchdog.swift", "HangWatch/Activity/EventLoop/EventLoopWatcher.swift", "HangWatch/Runtime/OnDemandThread.swift",
                "HangWatch/Runtime/NamedThread.swift",
            ],
            "\(starters)")
    }

    /// One timer (docs/architecture.md): the library's timed duties are lanes of the watchdog, and
    /// its one wait (`WatchdogEnvironment.wait` on a `WatchdogWake`) is the only timed wait. What is
    /// still outside it is listed here with why; nothing may join the list, and an entry whose wait
    /// is gone must leave it.
    @Test func noTimedWaitIsOutsideTheWatchdog() throws {
        let timed =
            #"asyncAfter\(|\bTimer\(|Timer\.scheduled|(?<![.\w])(?<!case )(u|nano|clock_nano)?sleep\(|Thread\.sleep|Task\.sleep|\.wait\(timeout:|wallTimeout:|timedwait\(|clockwait\(|epoll_wait\(|(?<![.\w])poll\(|untilNanoseconds"#
        let watchdog: Set = [
            "HangWatch/Detection/WatchdogWake.swift", "HangWatch/Detection/WatchdogEnvironment.swift",
            // (The wake's semaphore, in C.)
            "HangWatch/Bridge/UnsafeWake.swift",
        ]
        let stillOutside = [
            "HangWatch/Activity/EventLoop/UnsafeLoopEpollWatch.swift": "the event-loop watcher's one wait, with no time limit (-1): idle loops' wakes",
            "HangWatch/Activity/Pool/PoolProbe.swift": "the attach jobs' meeting on pool workers, bounded at 20 ms: not a duty of the monitor's",
            "HangWatch/Capture/LinuxStackSampler.swift": "a capture guard's pause, on the watchdog's own thread within one look",
            "HangWatch/Activity/RunLoop/RunLoopActivitySource.swift": "a zero-interval Timer: the way onto a run loop's thread, no time",
        ]
        var found: [String: [Int]] = [:]
        for file in try Self.swiftSources() where file.path.hasPrefix("HangWatch/") || file.path.hasPrefix("HangWatchNIO/") {
            for (index, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where Self.code(String(line)).range(of: timed, options: .regularExpression) != nil {
                found[file.path, default: []].append(index + 1)
            }
        }
        #expect(found["HangWatch/Detection/WatchdogEnvironment.swift"] != nil, "the finder is broken: \(found)")
        let outside = found.filter { !watchdog.contains($0.key) && stillOutside[$0.key] == nil }
        #expect(outside.isEmpty, "timed waits outside the watchdog: \(outside.map { "\($0.key):\($0.value)" }.sorted())")
        let gone = stillOutside.keys.filter { found[$0] == nil }
        #expect(gone.isEmpty, "no timed wait left in \(gone.sorted()): take it off the list")
    }

    /// One runtime per process: state shared by every monitor of the process lives in
    /// `ProcessRuntime` (its `process`), or beside the C or runtime state it mirrors (an `Unsafe…`
    /// file: the capture slot, the enqueue hooks, the label and attachment tables). A `static`
    /// lock, atomic or shared instance anywhere else fails here.
    @Test func processWideStateIsTheRuntimesOrBesideTheCStateItMirrors() throws {
        let singleton = #"static\s+(let|var)\s+(shared|process)\b|static\s+(let|var)\s+\w+\s*(:\s*[^=]+)?=\s*(Mutex|Atomic)\b"#
        let allowed: Set = [
            "HangWatch/Runtime/ProcessRuntime.swift",
            // (The package's probe for its own tools: an image map cached for them, no monitor's.)
            "HangWatch/Capture/CaptureProbe.swift",
        ]
        var found: [String] = []
        for file in try Self.swiftSources() where file.path.hasPrefix("HangWatch/") || file.path.hasPrefix("HangWatchNIO/") {
            let name = file.path.split(separator: "/").last.map(String.init) ?? ""
            guard !name.hasPrefix("Unsafe"), !allowed.contains(file.path) else { continue }
            for (index, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where Self.code(String(line)).range(of: singleton, options: .regularExpression) != nil {
                found.append("\(file.path):\(index + 1)")
            }
        }
        #expect(found.isEmpty, "process-wide state outside the runtime: \(found)")
        let runtime = try #require(try Self.swiftSources().first { $0.path == "HangWatch/Runtime/ProcessRuntime.swift" })
        #expect(runtime.text.range(of: singleton, options: .regularExpression) != nil, "the finder is broken")
    }

    /// One runtime per process: what the process has one of is made in one place, never by a
    /// monitor for itself: the watchdog and the event-loop watcher by `ProcessRuntime`, a report
    /// directory's writer and heartbeat lane by `SharedReportDirectory` (held through the runtime),
    /// the dump lane by `DumpService`. A second maker anywhere fails here.
    @Test func whatAProcessHasOneOfIsMadeInOnePlace() throws {
        let makers: [String: String] = [
            "Watchdog(": "HangWatch/Runtime/ProcessRuntime.swift",
            "EventLoopWatcher(": "HangWatch/Runtime/ProcessRuntime.swift",
            "ImageRegistry(": "HangWatch/Runtime/ProcessRuntime.swift",
            "ReportWriter(": "HangWatch/Runtime/SharedReportDirectory.swift",
            "HeartbeatLane(": "HangWatch/Runtime/SharedReportDirectory.swift",
            "ReportHoldBackLane(": "HangWatch/Runtime/SharedReportDirectory.swift",
            "DumpLane(": "HangWatch/Dump/DumpService.swift",
            "SharedReportDirectory(": "HangWatch/Assembly/MonitorAssembly+Parts.swift",
        ]
        let sources = try Self.swiftSources().filter { $0.path.hasPrefix("HangWatch/") || $0.path.hasPrefix("HangWatchNIO/") }
        for (call, place) in makers.sorted(by: { $0.key < $1.key }) {
            let pattern = "(?<![\\w.])" + NSRegularExpression.escapedPattern(for: call)
            let found = sources.filter { file in
                file.text.split(separator: "\n").contains { Self.code(String($0)).range(of: pattern, options: .regularExpression) != nil }
            }.map(\.path)
            #expect(found == [place], "\(call) is made in \(found), not only in \(place)")
        }
    }

    /// One way to look at a thread: every stack sampler is made by `ThreadInspection` (the hang
    /// lane's, the wait inspector's, the pool watch's, a dump's, the tools' probe).
    @Test func everySamplerIsMadeByTheThreadInspection() throws {
        let makers = try Self.swiftSources().filter { !$0.path.hasPrefix("Tools/") }.filter { file in
            file.text.split(separator: "\n").contains { Self.code(String($0)).contains("LinuxStackSampler(") }
        }.map(\.path)
        #expect(makers == ["HangWatch/Capture/ThreadInspection.swift"], "\(makers)")
    }

    /// A lane of the watchdog is one step (`advance(turn) -> WatchdogWait`) and the handle its
    /// join waits on: the park handshake and the late-wake accounting are the watchdog's.
    @Test func aWatchdogLaneIsOneStep() throws {
        let file = try #require(try Self.swiftSources().first { $0.path == "HangWatch/Detection/WatchdogLane.swift" })
        let start = try #require(file.text.range(of: "protocol WatchdogLane"))
        let body = file.text[start.upperBound...].prefix { $0 != "}" }
        let requirements = body.split(separator: "\n").map { Self.code(String($0)).trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("func ") || $0.hasPrefix("var ") }
        #expect(requirements == ["func advance(_ turn: WatchdogTurn) -> WatchdogWait", "var finished: DispatchSemaphore { get"], "\(requirements)")
    }
}
