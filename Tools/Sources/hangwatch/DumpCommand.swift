import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchReading
import HangWatchDumpChannel
import HangWatchRendering
@_spi(Internal) import HangWatchReport

/// `hangwatch dump PID`: the threads of a running monitored process now, like jstack; with
/// `--tasks`, every Swift task, like Go's goroutine dump; with `--recent`, the current window of
/// every flight recorder, without a hang (Go's flight recorder, on demand).
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Show what every thread (or, with --tasks, every Swift task) of a running monitored process is doing now, and what it waits for; with --recent, how busy its loops were in the last seconds.",
        usage: "hangwatch dump <pid> [<options>]",
        discussion: """
            The process's monitor is found by its heartbeat file (.heartbeat-PID) in the report \
            directory or one of its service subdirectories (the agent's spool), and asked with a \
            signal queued to the process: its watchdog takes every thread's state, time in that \
            state, stack (walked from /proc, no thread is signalled), what it waits for and who \
            holds it, and any wait cycle (a deadlock, printed first), and writes them next to its \
            reports. Asking takes permission to signal the process (its user, or root) and to \
            read its reports.

            Nothing read is trusted (this is often run as root): a heartbeat is believed only if \
            it is a regular file (not a symlink) with one name, owned by the process's user or \
            root and writable by no one else, in a real directory of the same owner that others \
            cannot write; if it was written by this very process (its pid and start time); and \
            if it names a real-time signal and a thread of the process other than its main \
            thread. Otherwise it says which file and which fact failed, signals nothing and exits \
            3; heartbeats of one process that name different signals or threads are an error \
            naming both (exit 3). The answer is checked the same way before it is read.

            The monitor may refuse (busy with another dump, or over its rate limit): then this \
            prints "hangwatch: process PID refused the dump: REASON" and exits 1. --service takes \
            a service's name, never a path.

            --tasks asks for every live Swift task instead (found in the process's own memory, \
            read through the kernel: nothing is stopped): findings first (wait cycles, actors \
            held while tasks wait for them, tasks on continuations seen waiting longer than \
            --suspended-over, tasks waiting for a blocked pool), then the tasks folded by state, \
            wait and async chain (--ids lists every id), the tree of task groups and async let, \
            and the actors. Swift keeps no time of a suspension: how long a task waited is how \
            long this monitor's task dumps saw it waiting the same way, so ask twice.

            --recent asks for the current window of every flight recorder instead, no hang \
            needed: for each watch of the process, its run loop's last seconds (5 s by default) \
            in 100 ms blocks, ▁ idle to █ busy, as `hangwatch show` draws a hang's lead-up, with \
            the busy ratio up to now (the piece in progress counted), the longest piece and \
            whether it is busy now; a watch without a recorder (only run loops and event loops keep one) says so. \
            --json keeps every bucket. A monitor that predates it answers with a thread dump: the \
            command says so and exits 1.

            Examples:
              hangwatch dump 4242
              hangwatch dump 4242 --service billing
              hangwatch dump 4242 --json | jq '.threads[] | select(.waitsFor != null)'
              hangwatch dump --tasks 4242 --suspended-over 30s
              hangwatch dump --tasks 4242 --json | jq '.tasks.folds[0]'
              hangwatch dump --recent 4242
              hangwatch dump --recent 4242 --json | jq '.recent.sources[0].window.busyRatio'
            """)

    @Argument(help: "The process id of a service that embeds HangWatch.")
    var pid: Int32

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var reading: ReadingOptions

    @Option(help: "Only this service's directory of the spool (its name, never a path).")
    var service: String?

    @Option(help: DurationArgument.help("How long to wait for the answer: 5s, 500ms (default 5s; 60s with --tasks)"))
    var timeout: DurationArgument?

    @Flag(help: "Every Swift task instead of every thread.")
    var tasks = false

    @Flag(help: "The last seconds of every watched loop (its flight recorder's window now) instead of every thread.")
    var recent = false

    @Option(help: DurationArgument.help("With --tasks: a finding for tasks on continuations seen waiting at least this long: 1m, 30s (default 1m)"))
    var suspendedOver: DurationArgument?

    @Flag(help: "With --tasks: every task's id in each group, not a range.")
    var ids = false

    /// The answer's wait: as given, else 5 s (60 s for the tasks: a dump of 100,000 takes seconds).
    private var waitSeconds: Double { timeout?.seconds ?? (tasks ? 60 : 5) }

    @Option(help: "Frames of each stack to show.")
    var frames: Int = 24

    @Flag(help: "Print the dump as JSON (a report whose source is `dump`, `tasks` or `recent`, symbolicated unless --no-symbolicate).")
    var json = false

    func validate() throws {
        if pid <= 0 { throw ValidationError("the pid must be positive") }
        if let service, let problem = DumpRequest.serviceNameProblem(service) {
            throw ValidationError(
                "--service takes a service's name, never a path: \(service.debugDescription) \(problem) (give the name of a subdirectory of the report directory, like --service billing)")
        }
        if waitSeconds <= 0 || waitSeconds > 600 { throw ValidationError("--timeout must be between 1ms and 10m") }
        if tasks && recent { throw ValidationError("--tasks and --recent ask for different dumps: give one") }
        if !tasks, ids || suspendedOver != nil { throw ValidationError("--ids and --suspended-over go with --tasks") }
        if frames < 1 { throw ValidationError("--frames must be at least 1") }
    }

    func run() throws {
        let library = ReportLibrary(directory: directory, reading: reading)
        try library.checkDirectory()
        let found = try DumpRequest.findMonitor(pid: pid, in: library.directory, service: service)
        let kind: DumpRequest.Kind = tasks ? .tasks : recent ? .recent : .threads
        let nonce = try DumpRequest.ask(pid: pid, watchdog: found.watchdog, signal: found.signal, kind: kind)
        let dump: HangReport
        switch try DumpRequest.awaitAnswer(nonce: nonce, from: found, timeout: waitSeconds) {
        case .refused(let reason):
            throw CommandFailure(message: "process \(pid) refused the dump: \(reason)", exitCode: Exit.nothingMatched)
        case .dump(let data, let path):
            dump = try Self.decode(data, path: path, library: library)
        }
        if let mismatch = DumpRequest.mismatch(dump, asked: kind, pid: pid) { throw mismatch }
        if json {
            print(String(decoding: try dump.encoded(), as: UTF8.self))
            return
        }
        if tasks {
            let text = TaskDumpText(terminal: library.terminal, maxFrames: frames, suspendedOverMs: suspendedOver?.milliseconds ?? 60_000, showIDs: ids)
            print(text.render(dump))
            return
        }
        if recent {
            print(ReportDetail(terminal: library.terminal, maxFrames: frames).renderRecent(dump))
            return
        }
        print(ReportDetail(terminal: library.terminal, maxFrames: frames).renderDump(dump))
    }

    /// The dump in an answer's bytes, symbolicated as `library` reads reports.
    static func decode(_ data: Data, path: String, library: ReportLibrary) throws -> HangReport {
        var dump: HangReport
        do {
            dump = try HangReport.decode(data)
        } catch {
            throw CommandFailure(message: "\(path): \(ErrorText.message(for: error))", exitCode: Exit.badInput)
        }
        if let symbolicator = library.symbolicator, dump.frames.contains(where: { $0.symbol == nil }) {
            symbolicator.symbolicate(&dump)
        }
        return dump
    }
}
