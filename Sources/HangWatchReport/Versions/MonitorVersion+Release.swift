// Written by scripts/stamp-version from the VERSION file, the one place the version is set: edit
// VERSION, and commit this file with it (make rewrites it; a test checks that the two agree).
extension MonitorVersion {
    /// The VERSION file's version: an unstamped build says it as `<release>-dev`.
    public static let release = "0.1.0"
}
