import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchRendering
import HangWatchReport

/// `hangwatch`: read, group, explain and export HangWatch reports.
@main
struct Hangwatch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hangwatch",
        abstract: "Read, group, explain and export HangWatch hang reports.",
        // Paragraphs are single lines (a `\` ends each source line) that the argument parser wraps to
        // the terminal; a blank line parts them. Examples stay under 78 columns.
        discussion: """
            \(DirectoryOptions.statement)

            Exit status: 0 ok, 1 nothing matched, 2 usage error, 3 bad input (an unreadable or \
            invalid report).

            Shell completions:
              hangwatch --generate-completion-script bash|zsh|fish
            """,
        version: MonitorVersion.versionLine(),
        subcommands: [
            ListCommand.self, ShowCommand.self, TopCommand.self, DiffCommand.self, ExportCommand.self, FlamegraphCommand.self,
            SymbolicateCommand.self, WatchCommand.self, DumpCommand.self, ValidateCommand.self,
        ],
        defaultSubcommand: ListCommand.self)

    /// Parses and runs, mapping errors to the documented exit codes.
    static func main() {
        if let word = CommandLine.arguments.dropFirst().first, let message = unknownSubcommand(word) {
            Terminal.warn(errorPrefix + message)
            Glibc.exit(Exit.usage.rawValue)
        }
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exitForParsing(error)
        }
        do {
            try command.run()
        } catch let failure as CommandFailure {
            Terminal.warn(errorPrefix + failure.message)
            Glibc.exit(failure.exitCode.rawValue)
        } catch let error where error is ExitCode || error is CleanExit || error is ValidationError || !isOurs(command) {
            // The parser's answers: help (its own help command), a usage error, an exit code.
            exitForParsing(error)
        } catch {
            // Anything else a command let go, in plain words (never Foundation's or a decoder's).
            Terminal.warn(errorPrefix + ErrorText.message(for: error))
            Glibc.exit(Exit.badInput.rawValue)
        }
    }

    /// Whether `command` is one of this tool's commands (not the argument parser's `help`).
    static func isOurs(_ command: any ParsableCommand) -> Bool {
        configuration.subcommands.contains { ObjectIdentifier($0) == ObjectIdentifier(type(of: command)) }
    }

    /// Help, a usage error or an exit code: the argument parser's own text (help on standard
    /// output; an error on standard error, begun with this tool's prefix like every other error
    /// instead of the parser's `Error: `) and status (a usage error is exit 2).
    static func exitForParsing(_ error: any Error) -> Never {
        let code = exitCode(for: error)
        guard code != .success else { exit(withError: error) }
        let text = fullMessage(for: error)
        if !text.isEmpty { Terminal.warn(prefixed(text)) }
        Glibc.exit(code == .validationFailure ? Exit.usage.rawValue : code.rawValue)
    }

    /// Every error this tool prints begins with this.
    static let errorPrefix = "hangwatch: "

    /// `text` with the argument parser's `Error: ` replaced by `errorPrefix`.
    static func prefixed(_ text: String) -> String {
        text.hasPrefix("Error: ") ? errorPrefix + text.dropFirst("Error: ".count) : text
    }

    /// A first word that looks like a mistyped command (`lsit`, `shwo`), with the command meant;
    /// nil for a command, an option, or anything the default command (`list`) takes.
    static func unknownSubcommand(_ word: String) -> String? {
        let names = configuration.subcommands.map { $0.configuration.commandName ?? "" } + ["help"]
        guard !word.hasPrefix("-"), !names.contains(word), word.allSatisfy({ $0.isLetter }) else { return nil }
        let closest = names.map { ($0, editDistance(word, $0)) }.min { $0.1 < $1.1 }
        guard let closest, closest.1 <= 2 else {
            return "unknown command '\(word)'; the commands are \(names.dropLast().joined(separator: ", "))"
        }
        return "unknown command '\(word)'. Did you mean '\(closest.0)'?"
    }

    /// Levenshtein distance between two short words.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(1, b.count) where !b.isEmpty {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }
}
