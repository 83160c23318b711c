/// Where the agent tells its service manager how it is: systemd's notify socket
/// (`SystemdNotifier`), or a recorder in tests.
///
/// Contract: one call is one message (one datagram), sent whole or not at all; a call never
/// blocks for long and never fails the caller (the result only says whether it went out).
protocol SystemdNotifying: Sendable {
    /// The socket messages go to; nil when not under systemd (then nothing is sent).
    var socketPath: String? { get }
    /// Sends newline-separated `KEY=VALUE` assignments; false when nothing was sent.
    @discardableResult
    func notify(_ message: String) -> Bool
}

extension SystemdNotifying {
    /// Sends `fields` (e.g. `["READY": "1", "STATUS": "…"]`) in one message, in the given order; a
    /// line break in a value becomes a space.
    @discardableResult
    func notify(_ fields: KeyValuePairs<String, String>) -> Bool {
        notify(fields.map { "\($0.key)=\($0.value.replacingOccurrences(of: "\n", with: " "))" }.joined(separator: "\n"))
    }
}
