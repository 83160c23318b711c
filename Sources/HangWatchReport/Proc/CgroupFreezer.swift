/// A cgroup's freezer, v1 and v2: the parsers. Pure; what each can prove is in docs/report-format.md
/// (`stoppedBy`).
///
/// - v1 `freezer.state`: `THAWED`, `FREEZING` (asked, not all tasks stopped yet) or `FROZEN`. Only
///   the state now: nothing of a freeze survives the thaw.
/// - v2 `cgroup.events`: `populated 0|1` and `frozen 0|1`; `cgroup.freeze` is the request (0/1).
/// - v2 `cgroup.stat.local` (kernel 6.18 on): `frozen_usec`, the time the cgroup spent between a
///   freeze request and its thaw, whether by itself or an ancestor, growing while frozen: read
///   before and after, the exact frozen time between. Absent in the root cgroup and before 6.18.
@_spi(Internal) public enum CgroupFreezer {
    public enum State: String, Sendable, Equatable {
        case thawed = "THAWED"
        case freezing = "FREEZING"
        case frozen = "FROZEN"

        /// Frozen, or on the way: the tasks are (being) stopped.
        public var isFreezing: Bool { self != .thawed }
    }

    /// v1 `freezer.state`, from its bytes (a `pread` buffer).
    package static func parseV1State(bytes: ArraySlice<UInt8>) -> State? {
        var fields = ByteFields(bytes)
        guard let word = fields.next(), fields.next() == nil else { return nil }
        return State(rawValue: String(decoding: word, as: UTF8.self))
    }

    public static func parseV1State(_ text: some StringProtocol) -> State? {
        parseV1State(bytes: Array(text.utf8)[...])
    }

    /// v2 `cgroup.events`' `frozen` (nil when the file has no such line).
    package static func parseV2Frozen(bytes: ArraySlice<UInt8>) -> Bool? {
        value(of: "frozen", in: bytes).map { $0 != 0 }
    }

    public static func parseV2Frozen(_ text: some StringProtocol) -> Bool? {
        parseV2Frozen(bytes: Array(text.utf8)[...])
    }

    /// v2 `cgroup.stat.local`'s `frozen_usec`, in microseconds (nil without it: before 6.18).
    package static func parseFrozenMicroseconds(bytes: ArraySlice<UInt8>) -> UInt64? {
        value(of: "frozen_usec", in: bytes)
    }

    public static func parseFrozenMicroseconds(_ text: some StringProtocol) -> UInt64? {
        parseFrozenMicroseconds(bytes: Array(text.utf8)[...])
    }

    /// The number after `key` in a flat-keyed file (`key value` lines).
    static func value(of key: String, in bytes: ArraySlice<UInt8>) -> UInt64? {
        var fields = ByteFields(bytes)
        while let field = fields.next() {
            guard let value = fields.next() else { return nil }
            if field.elementsEqual(key.utf8) { return ByteFields.decimal(value) }
        }
        return nil
    }

    /// Whether process `pid`'s cgroup is frozen or freezing now, as another process (the agent)
    /// reads it: v1 `freezer.state` of its freezer cgroup, v2 `cgroup.events` of its unified one (a
    /// hierarchy's root, which has neither file, cannot be frozen). Nil when neither hierarchy is
    /// under this reader's mounts.
    public static func isFrozen(pid: Int32) -> Bool? {
        guard let paths = CgroupPaths.read(pid: pid) else { return nil }
        let freezer = paths.directory(controller: "freezer")
        let unified = paths.unifiedDirectory()
        if let freezer, let state = SmallFile.text(freezer.path + "/freezer.state", limit: 64).flatMap({ parseV1State($0) }), state.isFreezing {
            return true
        }
        if let unified, SmallFile.text(unified.path + "/cgroup.events", limit: 256).flatMap({ parseV2Frozen($0) }) == true {
            return true
        }
        return freezer == nil && unified == nil ? nil : false
    }
}
