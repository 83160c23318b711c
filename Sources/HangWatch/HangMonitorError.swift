/// Errors from creating or starting a `HangMonitor`. Each message says what was wrong and how to fix it.
public enum HangMonitorError: Error, Equatable, CustomStringConvertible {
    /// A configuration value is out of range or unparsable. `key` names the setting
    /// (the environment/config-file key where that is where it came from).
    case invalidConfiguration(key: String, value: String, reason: String)
    /// The configuration file could not be read.
    case unreadableConfigurationFile(path: String, reason: String)
    /// `start` was called on a monitor that is already running.
    case alreadyRunning
    /// The capture signal handler could not be installed.
    case captureUnavailable(reason: String)
    /// The report directory cannot be used.
    case reportDirectoryUnusable(path: String, reason: String)

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
