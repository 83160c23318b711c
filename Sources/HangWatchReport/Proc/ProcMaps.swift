/// A file as the kernel identifies it: its device (as `stat`'s `st_dev`) and inode.
@_spi(Internal) public struct FileIdentity: Hashable, Sendable {
    public var device: UInt64
    public var inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// From `/proc/<pid>/maps`' `major:minor` (hex) and inode: `st_dev` as glibc's `makedev` makes it.
    public init?(mapsDevice: Substring, inode: Substring) {
        let parts = mapsDevice.split(separator: ":")
        guard parts.count == 2, let major = UInt64(parts[0], radix: 16), let minor = UInt64(parts[1], radix: 16),
            let inode = UInt64(inode)
        else { return nil }
        device = ((major & 0xffff_f000) << 32) | ((major & 0xfff) << 8) | ((minor & 0xffff_ff00) << 12) | (minor & 0xff)
        self.inode = inode
    }
}

/// `/proc/<pid>/maps`: what a process maps. Readable by the process's user and root (as its
/// signals are).
@_spi(Internal) public enum ProcMaps {
    /// The files `pid` maps shared (`rw-s`, `r--s`: a heartbeat page is one); nil when its maps
    /// cannot be read.
    public static func sharedFiles(pid: Int32) -> Set<FileIdentity>? {
        SmallFile.text("/proc/\(pid)/maps", limit: 16 << 20).map(sharedFiles(maps:))
    }

    /// The shared file mappings in the text of a `maps` file: `start-end perms offset dev inode path`.
    public static func sharedFiles(maps: String) -> Set<FileIdentity> {
        var files: Set<FileIdentity> = []
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 5, fields[1].count == 4, fields[1].last == "s", fields[4] != "0",
                let file = FileIdentity(mapsDevice: fields[3], inode: fields[4])
            else { continue }
            files.insert(file)
        }
        return files
    }
}
