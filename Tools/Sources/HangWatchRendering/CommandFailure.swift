/// One of the CLI's documented exit codes: 0 ok, 1 nothing matched, 2 usage, 3 bad input.
package struct CommandExit: Equatable, Sendable {
    package let rawValue: Int32

    package init(_ rawValue: Int32) {
        self.rawValue = rawValue
    }
}

/// The documented exit codes by name.
package enum Exit {
    package static let nothingMatched = CommandExit(1)
    package static let usage = CommandExit(2)
    package static let badInput = CommandExit(3)
}

/// A failure the user caused (a bad file, nothing found): the message the CLI prints after its
/// prefix, and the exit code.
package struct CommandFailure: Error, CustomStringConvertible {
    package var message: String
    package var exitCode: CommandExit
    package var description: String { message }

    package init(message: String, exitCode: CommandExit) {
        self.message = message
        self.exitCode = exitCode
    }
}
