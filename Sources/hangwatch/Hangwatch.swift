import ArgumentParser
import Foundation

/// `hangwatch`: read, group, explain and export HangWatch reports.
@main
struct Hangwatch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hangwatch",
        abstract: "Read, group, explain and export HangWatch hang reports.",
        discussion: """
            Reports are read from --dir, else $HANGWATCH_REPORT_DIR, else the agent's spool
            (\(DirectoryOptions.defaultDirectory)) if it exists, else the demo's \(DirectoryOptions.demoDirectory)
            if it exists (each with its service subdirectories).

            Exit status: 0 ok, 1 nothing matched, 2 usage error, 3 bad input (an unreadable or invalid report).
            Shell completions: hangwatch --generate-completion-script bash|zsh|fish
            """,
        version: "0.1.0",
        subcommands: [
            ListCommand.self, ShowCommand.self, TopCommand.self, ExportCommand.self, FlamegraphCommand.self,
            SymbolicateCommand.self, WatchCommand.self, ValidateCommand.self,
        ],
        defaultSubcommand: ListCommand.self)

    /// Parses and runs, mapping errors to the documented exit codes.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let failure as CommandFailure {
            Terminal.warn("hangwatch: \(failure.message)")
            Foundation.exit(failure.exitCode.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                Terminal.warn(fullMessage(for: error))
                Foundation.exit(Exit.usage.rawValue)
            }
            exit(withError: error)
        }
    }
}
