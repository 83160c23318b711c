import HangWatchReading
import HangWatchRendering
import HangWatchSymbolication

extension ReportLibrary {
    /// The library the command line asks for: its directory and how to read and show reports.
    init(directory: DirectoryOptions, reading: ReadingOptions) {
        Text.utc = reading.utc
        let resolved = directory.resolved
        self.init(
            directory: resolved.directory, origin: resolved.origin, terminal: Terminal(color: reading.color),
            symbolicator: reading.noSymbolicate ? nil : Symbolicator(debugDirectories: reading.debugDirectories))
    }
}
