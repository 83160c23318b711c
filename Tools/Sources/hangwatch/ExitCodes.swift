import ArgumentParser

/// Documented exit codes: 0 ok, 1 nothing matched, 2 usage, 3 bad input.
enum Exit {
    static let nothingMatched = ExitCode(1)
    static let usage = ExitCode(2)
    static let badInput = ExitCode(3)
}
