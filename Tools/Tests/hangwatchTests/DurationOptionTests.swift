import ArgumentParser
import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

@testable import hangwatch

/// Every option of every command that takes a length of time reads it one way: a number with a
/// unit, or a plain number of seconds, as docs/cli.md says. The options are found from the
/// commands' own definitions (each property whose option value is a `DurationArgument`, through
/// the option groups), not from a list that could miss the next one.
@Suite struct DurationOptionTests {
    /// One option that takes a length of time: the command, the type that declares it, its property.
    struct Found: CustomStringConvertible {
        var command: String
        var declaredIn: any ParsableArguments.Type
        var property: String
        /// The name ArgumentParser gives the property: `minDuration` → `--min-duration`.
        var name: String {
            "--" + property.reduce(into: "") { $0 += $1.isUppercase ? "-" + $1.lowercased() : String($1) }
        }
        var description: String { "hangwatch \(command) \(name)" }
    }

    static var commands: [(name: String, type: any ParsableCommand.Type)] {
        hangwatch.Hangwatch.configuration.subcommands.map { ($0.configuration.commandName ?? "\($0)", $0) }
    }

    /// The options of `type` (and of its option groups) whose value is a `DurationArgument`.
    static func durationOptions(in type: any ParsableArguments.Type, command: String) -> [Found] {
        var found: [Found] = []
        for child in Mirror(reflecting: type.init()).children {
            guard let label = child.label, label.hasPrefix("_") else { continue }
            let wrapper = Swift.type(of: child.value)
            if let option = wrapper as? any OptionValueType.Type,
                option.valueType == DurationArgument.self || option.valueType == DurationArgument?.self
            {
                found.append(Found(command: command, declaredIn: type, property: String(label.dropFirst())))
            } else if let group = wrapper as? any OptionGroupType.Type {
                found += durationOptions(in: group.groupType, command: command)
            }
        }
        return found
    }

    static var allDurationOptions: [Found] { commands.flatMap { durationOptions(in: $0.type, command: $0.name) } }

    /// The flags an option is refused without (`dump --suspended-over` goes with `--tasks`).
    static let companions = ["hangwatch dump --suspended-over": ["--tasks"]]

    /// What `declaredIn` parsed from `option value` holds in `property` (positional arguments it
    /// requires are given as `1`), or the parser's message.
    static func parsedSeconds(_ found: Found, _ value: String) throws -> Double? {
        var arguments = [found.name, value] + (companions[found.description] ?? [])
        for _ in 0..<4 {
            do {
                let parsed = try found.declaredIn.parse(arguments)
                let child = Mirror(reflecting: parsed).children.first { $0.label == "_" + found.property }
                let wrapped = (child?.value as? any OptionValueType)?.parsedValue
                if let duration = wrapped as? DurationArgument { return duration.seconds }
                if let duration = wrapped as? DurationArgument? { return duration?.seconds }
                return nil
            } catch {
                let message = found.declaredIn.message(for: error)
                guard message.hasPrefix("Missing expected argument") else {
                    throw ParseFailure(message: "\(found) \(value): \(message)")
                }
                arguments.insert("1", at: 0)
            }
        }
        throw ParseFailure(message: "\(found): too many required arguments")
    }

    struct ParseFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// The filters' `--min-duration`, `watch`'s `--timeout` and `--interval` and `dump`'s
    /// `--timeout` are among them (the search finds what it should), each in every command that
    /// has it.
    @Test func theSearchFindsTheKnownOptions() {
        let found = Set(Self.allDurationOptions.map(\.description))
        for known in ["hangwatch list --min-duration", "hangwatch top --min-duration", "hangwatch watch --timeout", "hangwatch watch --interval",
            "hangwatch dump --timeout", "hangwatch dump --suspended-over", "hangwatch export --min-duration", "hangwatch diff --min-duration"]
        {
            #expect(found.contains(known), "\(known) not found in \(found.sorted())")
        }
    }

    /// A plain number is seconds in every one of them; a unit is that unit.
    @Test func aPlainNumberIsSecondsInEveryOption() throws {
        let options = Self.allDurationOptions
        #expect(options.count >= 7)
        for option in options {
            #expect(try Self.parsedSeconds(option, "5") == 5, "\(option) 5")
            #expect(try Self.parsedSeconds(option, "1.5") == 1.5, "\(option) 1.5")
            #expect(try Self.parsedSeconds(option, "250ms") == 0.25, "\(option) 250ms")
            #expect(try Self.parsedSeconds(option, "1m") == 60, "\(option) 1m")
            #expect(throws: ParseFailure.self, "\(option) fast") { try Self.parsedSeconds(option, "fast") }
            #expect(throws: ParseFailure.self, "\(option) -1") { try Self.parsedSeconds(option, "-1") }
        }
        // Compound forms and every unit the settings know.
        #expect(DurationArgument(argument: "1h30m")?.seconds == 5400)
        #expect(DurationArgument(argument: "2h")?.seconds == 7200)
        #expect(DurationArgument(argument: "500us")?.seconds == 0.0005)
        #expect(DurationArgument(argument: "nan") == nil && DurationArgument(argument: "inf") == nil && DurationArgument(argument: "") == nil)
    }

    /// Every option the binary's help describes as a length of time (its value named `duration`,
    /// or its name one of time's: timeout, interval, duration, delay, period, age) is one of
    /// those found, and its help says what a plain number is; docs/cli.md says the same.
    @Test func everyOptionThatTakesATimeIsADurationAndSaysItsUnit() throws {
        let fixture = try Fixture(withDemoReports: false)
        let dump = try Hangwatch.run(["--experimental-dump-help"], cache: fixture.cache)
        #expect(dump.status == 0, "\(dump.errors)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.output.utf8)) as? [String: Any])
        let tool = try #require(root["command"] as? [String: Any])
        let found = Set(Self.allDurationOptions.map(\.description))
        var timeOptions: [String] = []
        for command in tool["subcommands"] as? [[String: Any]] ?? [] {
            let name = command["commandName"] as? String ?? ""
            for argument in command["arguments"] as? [[String: Any]] ?? [] where argument["kind"] as? String == "option" {
                let option = (argument["preferredName"] as? [String: Any])?["name"] as? String ?? ""
                let valueName = argument["valueName"] as? String ?? ""
                let timeWords = ["timeout", "interval", "duration", "delay", "period", "age"]
                guard valueName == "duration" || timeWords.contains(where: option.contains) else { continue }
                let described = "hangwatch \(name) --\(option)"
                timeOptions.append(described)
                #expect(found.contains(described), "\(described) takes a length of time but is not a DurationArgument")
                #expect(valueName == "duration", "\(described): its value is not named duration")
                #expect((argument["abstract"] as? String ?? "").contains(DurationArgument.plainNumber), "\(described): its help does not say what a plain number is")
            }
        }
        #expect(Set(timeOptions) == found, "found by type: \(found.sorted()); by help: \(timeOptions.sorted())")
        let cli = try String(contentsOfFile: DocumentedCommandTests.repository + "/docs/cli.md", encoding: .utf8)
        #expect(cli.contains("a plain number, which is **seconds**"))
    }

    /// The binary reads it so: `--min-duration 0.5` keeps the demo's hangs of half a second or
    /// more (it was 0.5 ms, which kept all of them), `--min-duration 500ms` the same ones.
    @Test func minDurationOfAPlainNumberFiltersBySeconds() throws {
        let fixture = try Fixture()
        let reports = try DemoReports.reports()
        let long = Set(reports.filter { $0.durationMs >= 500 }.map(\.id))
        try #require(!long.isEmpty && long.count < reports.count, "the demo's durations: \(reports.map(\.durationMs))")
        for value in ["0.5", "500ms"] {
            let result = try fixture.hangwatch("list", "--json", "--min-duration", value)
            #expect(result.status == 0, "\(value): \(result.errors)")
            let ids = Set(try HangReport.makeDecoder().decode([ReportSummary].self, from: Data(result.output.utf8)).map(\.id))
            #expect(ids == long, "--min-duration \(value)")
        }
    }
}

/// What the search reads of an `@Option`: its value's type, and once parsed, its value.
protocol OptionValueType {
    static var valueType: Any.Type { get }
    var parsedValue: Any { get }
}

extension Option: OptionValueType {
    static var valueType: Any.Type { Value.self }
    var parsedValue: Any { wrappedValue }
}

/// What the search reads of an `@OptionGroup`: the type of its group.
protocol OptionGroupType {
    static var groupType: any ParsableArguments.Type { get }
}

extension OptionGroup: OptionGroupType {
    static var groupType: any ParsableArguments.Type { Value.self }
}
