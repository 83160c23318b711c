import Foundation
import HangWatchTestSupport
import Testing

/// Small C libraries compiled for a test, with the C compiler that ships with Swift.
enum TestLibrary {
    static func build(name: String, code: String, flags: [String] = [], libraries: [String] = []) throws -> String {
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-lib-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let source = directory + "/\(name).c"
        let library = directory + "/lib\(name).so"
        try code.write(toFile: source, atomically: true, encoding: .utf8)
        let compiler = try #require(
            ["/opt/swift/usr/bin/clang", "/usr/bin/clang", "/usr/bin/cc", "/usr/bin/gcc"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            }, "no C compiler found to build the test library")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: compiler)
        process.arguments = ["-shared", "-fPIC", "-O1", "-fno-omit-frame-pointer"] + flags + ["-o", library, source] + libraries
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "compiling \(name) failed")
        return library
    }
}
