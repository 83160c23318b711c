/// Errors from creating, configuring or starting a ``HangMonitor``. Each message
/// (``description``) says what was wrong and how to fix it.
public enum HangMonitorError: Error, Equatable, CustomStringConvertible {
    /// A configuration value is out of range or unparsable, or differs from the directory settings
    /// of another monitor of the process that writes to the same report directory.
    ///
    /// - Parameters:
    ///   - key: The setting: its property's name (`threshold`) for a value out of range; its
    ///     `HANGWATCH_*` key for a text that is unknown or does not parse (from a file, with the
    ///     file and line: `KEY (path:line)`).
    ///   - value: The value given, as text.
    ///   - reason: What is accepted, or what it must agree with.
    case invalidConfiguration(key: String, value: String, reason: String)
    /// The configuration file could not be read (missing, unreadable, too large, not UTF-8 text).
    ///
    /// - Parameters:
    ///   - path: The file, as given.
    ///   - reason: Why it could not be read.
    case unreadableConfigurationFile(path: String, reason: String)
    /// `start` was called on a monitor that is already running; ``HangMonitor/stop()`` it first.
    case alreadyRunning
    /// The capture signal's handler could not be installed.
    ///
    /// - Parameter reason: The system call that failed, and why.
    case captureUnavailable(reason: String)
    /// The report directory cannot be used: it cannot be created, is not a directory, is owned by
    /// another user, is writable by others (without the sticky bit), or cannot be cleared of stale
    /// temporary files.
    ///
    /// - Parameters:
    ///   - path: The directory (``HangMonitor/Configuration/reportDirectory``).
    ///   - reason: The error that stopped it.
    case reportDirectoryUnusable(path: String, reason: String)

    /// One line that says what was wrong and how to fix it, for a log or a terminal.
    public var description: String {
        switch self {
        case .invalidConfiguration(let key, let value, let reason):
            return "invalid \(key)=\"\(value.prefix(120))\": \(reason)"
        case .unreadableConfigurationFile(let path, let reason):
            return "cannot read HangWatch configuration file \(path): \(reason)"
        case .alreadyRunning:
            return "this HangMonitor is already running; call stop() before starting it again"
        case .captureUnavailable(let reason):
            return "stack capture unavailable: \(reason)"
        case .reportDirectoryUnusable(let path, let reason):
            return "report directory \(path) is unusable: \(reason)"
        }
    }
}
