@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// A private, writable, anonymous mapping of `/proc/self/maps`: where thread stacks live.
struct StackMapping: Equatable {
    var start: UInt
    var end: UInt

    init(start: UInt, end: UInt) {
        self.start = start
        self.end = end
    }

    func contains(_ address: UInt) -> Bool { start <= address && address < end }

    /// Gives a thread that was never attached the bounds of the mapping that holds its stack
    /// pointer, when it is blocked in a system call (`/proc` tells the pointer then). `mappings`
    /// is read on first need and kept for the caller's next thread. True when the mappings were
    /// consulted (the thread was blocked), whether or not one held the pointer.
    @discardableResult
    static func boundBlockedThread(_ thread: inout MonitoredThread, mappings: inout [StackMapping]?) -> Bool {
        guard case .inSyscall(_, _, let stackPointer, _)? = ProcTask(tid: thread.tid).syscall() else { return false }
        if mappings == nil { mappings = readAll() }
        if let mapping = mappings?.first(where: { $0.contains(stackPointer) }) {
            thread.stackLow = mapping.start
            thread.stackHigh = mapping.end
            thread.preparedForSignals = false
        }
        return true
    }

    static func readAll() -> [StackMapping] {
        guard let maps = SmallFile.text("/proc/self/maps", limit: 16 << 20) else { return [] }
        return maps.split(separator: "\n").compactMap(StackMapping.init(line:))
    }

    /// `start-end rw-p offset dev inode` with no path (or `[stack]`).
    init?(line: Substring) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 5, fields[1].hasPrefix("rw"), fields.count == 5 || fields[5] == "[stack]" else { return nil }
        let range = fields[0].split(separator: "-")
        guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16), start < end else {
            return nil
        }
        self.start = start
        self.end = end
    }
}
