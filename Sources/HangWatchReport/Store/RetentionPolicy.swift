/// How many reports a directory keeps. The oldest go first.
public struct RetentionPolicy: Sendable, Equatable {
    /// At most this many report files.
    public var maxReports: Int
    /// At most this many bytes of report files.
    public var maxBytes: UInt64

    public init(maxReports: Int, maxBytes: UInt64) {
        self.maxReports = maxReports
        self.maxBytes = maxBytes
    }

    /// Which of `files` (sorted oldest first) to remove so the rest fits, never one in `protectedIDs`.
    public func filesToRemove(from files: [ReportStore.StoredFile], keeping protectedIDs: Set<String> = [])
        -> [ReportStore.StoredFile]
    {
        var count = files.count
        var bytes = files.reduce(UInt64(0)) { $0 + $1.size }
        var victims: [ReportStore.StoredFile] = []
        for file in files where count > maxReports || bytes > maxBytes {
            if protectedIDs.contains(file.id) { continue }
            victims.append(file)
            count -= 1
            bytes -= file.size
        }
        return victims
    }
}
