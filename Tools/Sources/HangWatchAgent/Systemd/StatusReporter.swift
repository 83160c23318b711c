import Synchronization

/// systemd's one-line `STATUS=`: sent when it changes, not after every pass.
final class StatusReporter: Sendable {
    private let notifier: any SystemdNotifying
    private let last = Mutex<String?>(nil)

    init(notifier: any SystemdNotifying) {
        self.notifier = notifier
    }

    /// Sends `status` unless it is the one sent last.
    func update(_ status: String) {
        let changed = last.withLock { last -> Bool in
            defer { last = status }
            return last != status
        }
        if changed { notifier.notify(["STATUS": status]) }
    }
}
