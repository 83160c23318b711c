/// A process's or a thread's `status` file (`/proc/<pid>/status`): `Name:\tvalue` lines. The one
/// reader of its fields for the monitor, the agent and the CLI.
@_spi(Internal) public struct ProcStatus: Sendable, Equatable {
    public var text: String

    public init(text: String) {
        self.text = text
    }

    /// Process `pid`'s, or nil when there is none (or it cannot be read).
    public static func read(pid: Int32) -> ProcStatus? {
        guard pid > 0 else { return nil }
        return read(path: "/proc/\(pid)/status")
    }

    public static func read(path: String) -> ProcStatus? {
        SmallFile.text(path, limit: 16 << 10).map(ProcStatus.init(text:))
    }

    /// The value of field `name` (`TracerPid`, `SigBlk`, ...), without the name and the blanks.
    public func field(_ name: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            return line.dropFirst(name.count + 1).trimmingWhitespace()
        }
        return nil
    }

    /// The real uid (the first value of `Uid:`).
    public var realUID: UInt32? {
        field("Uid").flatMap { $0.split(whereSeparator: { $0 == "\t" || $0 == " " }).first }.flatMap { UInt32($0) }
    }

    /// The tracer's pid (`TracerPid:`; 0: none).
    public var tracerPID: Int32? { field("TracerPid").flatMap { Int32($0) } }

    /// How many CPUs it may run on (`Cpus_allowed_list`: `0-3,8`).
    public var allowedCPUCount: Int? {
        guard let list = field("Cpus_allowed_list") else { return nil }
        var count = 0
        for range in list.split(separator: ",") {
            let bounds = range.split(separator: "-")
            guard let low = bounds.first.flatMap({ Int($0) }), let high = bounds.count == 2 ? Int(bounds[1]) : low, bounds.count <= 2, high >= low
            else { return nil }
            count += high - low + 1
        }
        return count > 0 ? count : nil
    }

    /// Signals blocked (`SigBlk`), bit n-1 for signal n.
    public var blockedSignals: UInt64? { field("SigBlk").flatMap { UInt64($0, radix: 16) } }

    /// `TracerPid:\t0`, from the bytes of the file without building strings.
    package static func tracerPID(bytes: ArraySlice<UInt8>) -> Int32? {
        var fields = ByteFields(bytes)
        while let field = fields.next() {
            if field.elementsEqual("TracerPid:".utf8) { return fields.next().flatMap(ByteFields.decimal).flatMap { Int32(exactly: $0) } }
        }
        return nil
    }

    /// `voluntary_ctxt_switches:\t12` (not the `nonvoluntary_` line after it), from the bytes of
    /// the file without building strings (the watchdog reads it per look).
    package static func voluntarySwitches(bytes: ArraySlice<UInt8>) -> UInt64? {
        var fields = ByteFields(bytes)
        while let field = fields.next() {
            if field.elementsEqual("voluntary_ctxt_switches:".utf8) { return fields.next().flatMap(ByteFields.decimal) }
        }
        return nil
    }
}
