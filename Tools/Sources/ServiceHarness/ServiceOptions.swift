import ArgumentParser
import Foundation

/// The command line both test services share (the Hummingbird and the Vapor one): where the
/// reports go, the threshold, the port and where to say it, where the handlers' measurements go,
/// and the bench's watch toggle.
package struct ServiceOptions: ParsableArguments {
    @Option(help: "Watch the server and write reports here (without it nothing is watched: the bench's baseline).")
    package var reports: String?

    @Option(name: .customLong("threshold-ms"), help: "The hang threshold, in milliseconds (10 ... 60000).")
    package var thresholdMilliseconds = 250

    @Option(help: "The port to listen on, on 127.0.0.1 (0: any free one).")
    package var port = 8080

    @Option(name: .customLong("port-file"), help: "Write the port listened on here, once listening.")
    package var portFile: String?

    @Option(help: "Append each blocking handler's own measurement here, one JSON line a request.")
    package var measurements: String?

    @Flag(name: .customLong("toggle-watch"), help: "Start with the watch off: SIGUSR1 starts it, SIGUSR2 stops it (the bench's paired windows).")
    package var toggleWatch = false

    package init() {}

    /// Says the port listened on in `portFile`, if one was given: written whole, then renamed, so
    /// a reader never sees half a number.
    package func announce(port: Int?) throws {
        guard let portFile, let port else { return }
        try Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
    }

    package func validate() throws {
        guard (10...60_000).contains(thresholdMilliseconds) else {
            throw ValidationError("--threshold-ms: \(thresholdMilliseconds) is not in 10...60000")
        }
        guard (0...65_535).contains(port) else { throw ValidationError("--port: \(port) is not in 0...65535") }
    }
}
