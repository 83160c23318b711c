/// Path arithmetic on plain strings. Foundation's `deletingLastPathComponent` traps on some short
/// relative paths ("r"), and a monitor must never take its host down over a path.
@_spi(Internal) public enum PathText {
    /// The directory part of `path` ("" for a name without one, "/" for a top-level entry);
    /// trailing slashes are ignored.
    public static func parent(of path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        let parent = trimmingTrailingSlashes(String(trimmed[..<slash]))
        return parent.isEmpty ? "/" : parent
    }

    /// The last component of `path` (trailing slashes ignored; "/" for the root itself).
    public static func lastComponent(of path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        let name = String(trimmed[trimmed.index(after: slash)...])
        return name.isEmpty ? trimmed : name
    }

    private static func trimmingTrailingSlashes(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1, path.last == "/" { path = path.dropLast() }
        return String(path)
    }
}
