import Foundation

/// Executables the bench runs but does not contain (the tools' CLI, agent and server bench, the
/// library's fault program): where an environment variable says (`make bench` sets one for each
/// tool of the other package), else next to this executable.
enum ToolBinary {
    /// The path of `name`, or an error that says how to build it and which variable names it.
    static func path(_ name: String, variable: String, build: String) throws -> String {
        if let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: path) else { throw BenchFailure("\(variable)=\(path) is not an executable") }
            return path
        }
        let here = ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]) as NSString
        let path = here.deletingLastPathComponent + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchFailure("no \(name) at \(path): build it (\(build)) and set \(variable) to it")
        }
        return path
    }
}
