import Foundation

/// Executables of this package, built next to the test bundle (`swift build --build-tests`).
enum BuiltExecutable {
    /// The path of executable `name` in the test bundle's directory.
    static func path(_ name: String) -> String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return (executable as NSString).deletingLastPathComponent + "/" + name
    }
}
