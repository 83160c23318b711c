import Foundation

/// Figures H1 and H2: real Hummingbird 2 and Vapor 4 servers under `wrk`, watched and not, measured
/// by the tools' `hangwatch-hummingbird-bench` (its package has the servers), run here as a child.
/// Its lines go to standard output as they come; its `result <goal> <value>` lines are the values
/// judged here, against Goals.swift (it judges nothing itself).
struct ServerFigure {
    var arguments: [String]

    /// The values the child printed, by goal id.
    struct Values {
        var values: [String: Double]

        func value(_ id: String) throws -> Double {
            guard let value = values[id] else { throw BenchFailure("hangwatch-hummingbird-bench printed no result for \(id)") }
            return value
        }

        func shown(_ id: String) -> String { values[id].map { String(format: "%.3f", $0) } ?? "none" }
    }

    func measure() throws -> Values {
        let bench = try ToolBinary.path(
            "hangwatch-hummingbird-bench", variable: "HANGWATCH_HUMMINGBIRD_BENCH",
            build: "swift build -c release --package-path Tools --scratch-path .build --product hangwatch-hummingbird-bench")
        let errorsPath = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-server-\(getpid()).err"
        _ = FileManager.default.createFile(atPath: errorsPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errorsPath) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bench)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsPath))
        try process.run()
        var values: [String: Double] = [:]
        var pending = Data()
        func take(_ line: String) {
            let fields = line.split(separator: " ")
            if fields.count == 3, fields[0] == "result", let value = Double(fields[2]) { values[String(fields[1])] = value }
            print(line)
            fflush(nil)
        }
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                take(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                pending.removeSubrange(pending.startIndex...newline)
            }
        }
        if !pending.isEmpty { take(String(decoding: pending, as: UTF8.self)) }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let errors = (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? ""
            let last = errors.split(separator: "\n").last.map(String.init) ?? "no message"
            throw BenchFailure("hangwatch-hummingbird-bench \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(last)")
        }
        return Values(values: values)
    }
}
