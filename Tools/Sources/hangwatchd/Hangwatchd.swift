import ArgumentParser
import Foundation
import HangWatchAgent
import HangWatchReport
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// `hangwatchd`: the host agent, run by systemd (`Type=notify`).
@main
struct Hangwatchd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hangwatchd",
        abstract: "The HangWatch host agent: keeps the report spool healthy, finishes hangs whose process died, watches the monitors' heartbeats and names new reports.",
        discussion: """
            Settings come from the configuration file (default \(AgentConfiguration.defaultFile); a
            missing default file means all defaults), then --report-root and --set, which override it.
            SIGHUP reloads the file; an invalid one is rejected and the running configuration kept.
            SIGTERM finishes the work in progress (at most HANGWATCHD_SHUTDOWN_TIMEOUT) and exits.

            Exit status: 0 stopped, 1 failed while running, 2 invalid configuration or usage,
            3 the spool is missing or unsafe.

            Examples:
              hangwatchd --check-config
              hangwatchd --report-root /tmp/reports --set HANGWATCHD_MAX_USE=64MiB
            """,
        version: MonitorVersion.versionLine())

    @Option(name: .customLong("config"), help: ArgumentHelp("The configuration file.", valueName: "path"))
    var configFile: String?

    @Option(name: .customLong("report-root"), help: ArgumentHelp("The spool (overrides HANGWATCHD_REPORT_ROOT).", valueName: "dir"))
    var reportRoot: String?

    @Option(name: .customLong("set"), help: ArgumentHelp("Override one setting (repeatable).", valueName: "KEY=VALUE"))
    var settings: [String] = []

    @Flag(name: .customLong("check-config"), help: "Check the configuration, print it, and exit.")
    var checkConfig = false

    /// Parses and runs. A command-line error begins with `hangwatchd: `, as the agent's other errors
    /// do (not the argument parser's `Error: `), and a usage error is exit 2, as documented.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            guard code != .success else { exit(withError: error) }
            let text = fullMessage(for: error)
            if !text.isEmpty {
                let message = text.hasPrefix("Error: ") ? "hangwatchd: " + text.dropFirst("Error: ".count) : text
                FileHandle.standardError.write(Data((message + "\n").utf8))
            }
            Glibc.exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }

    var overrides: [String] { (reportRoot.map { ["HANGWATCHD_REPORT_ROOT=\($0)"] } ?? []) + settings }

    func run() throws {
        let configuration: AgentConfiguration
        do {
            configuration = try AgentConfiguration.load(file: configFile, overrides: overrides)
        } catch {
            FileHandle.standardError.write(Data("hangwatchd: invalid configuration: \(error)\n".utf8))
            throw ExitCode(2)
        }
        if checkConfig {
            print(configuration.settingsText)
            return
        }
        // A parent may have left these blocked (a test runner, a shell script): the agent's shutdown
        // and reload depend on them.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)

        let levels = JournalLogHandler.LevelBox(configuration.logLevel)
        // Priority prefixes only when standard error is the journal ($JOURNAL_STREAM says so).
        let style = JournalLogHandler.Style.forStream(STDERR_FILENO)
        LoggingSystem.bootstrap { label in JournalLogHandler(label: label, level: levels, style: style) }
        let logger = Logger(label: "hangwatchd")
        let daemon: AgentDaemon
        do {
            daemon = try AgentDaemon(configuration: configuration, configurationFile: configFile, overrides: overrides, logger: logger, levels: levels)
        } catch {
            logger.critical("hangwatchd cannot start", metadata: ["hangwatch.error": "\(error)"])
            throw ExitCode(Self.exitStatus(error))
        }
        Task.detached {
            do {
                try await daemon.run()
                Foundation.exit(0)
            } catch {
                logger.critical("hangwatchd failed", metadata: ["hangwatch.error": "\(error)"])
                Foundation.exit(Self.exitStatus(error))
            }
        }
        // The main run loop keeps the agent's time; the agent watches it for hangs of its own.
        RunLoop.main.run()
    }

    /// docs/agent.md's exit statuses: 3 for a spool that is missing or unsafe, 1 for the rest.
    static func exitStatus(_ error: any Error) -> Int32 {
        (error as? AgentFailure)?.kind == .spoolRefused ? 3 : 1
    }
}
