import Foundation
import Synchronization
import HangWatchReport
@testable import HangWatchSymbolication
import Testing

@inline(never)
func symbolicationProbe() -> [UInt] {
    Thread.callStackReturnAddresses.map { UInt(truncating: $0) }
}

/// This test binary as a report image: its path and load bias from /proc/self/maps.
func thisExecutableImage(buildID: String?) throws -> (image: HangReport.Image, bias: UInt) {
    let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let maps = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
    for line in maps.split(separator: "\n") where line.hasSuffix(path) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 6, fields[2] == "00000000" else { continue }
        let start = UInt(fields[0].split(separator: "-")[0], radix: 16)!
        return (HangReport.Image(path: path, buildId: buildID, base: "0x" + String(start, radix: 16), size: 0, isMainExecutable: true), start)
    }
    throw CocoaError(.fileNoSuchFile)
}

func report(addresses: [UInt], image: HangReport.Image, bias: UInt) -> HangReport {
    let frames = addresses.map {
        HangReport.Frame(address: "0x" + String($0, radix: 16), image: 0, offset: "0x" + String($0 - bias, radix: 16))
    }
    return HangReport(
        id: "x", service: "s", host: "h", pid: 1, process: .init(executable: image.path, startTimeTicks: 0),
        thread: .init(tid: 1, name: nil, isMain: true), startedAt: Date(), detectedAt: Date(), endedAt: Date(),
        durationMs: 300, thresholdMs: 250, outcome: .recovered, activity: "afterWaiting", mode: nil, samples: [],
        stacks: [HangReport.Stack(frames: Array(frames.indices), truncated: false)],
        heaviestStack: HangReport.HeaviestStack(stack: 0, sampleCount: 1, weightMs: 50, frames: frames),
        frames: frames, images: [image], signature: "0",
        context: .init(
            verdict: .computing, onCpuRatio: 1, runQueueRatio: 0, blockedIn: nil, threadStates: [:], rssBytes: nil,
            loadAverage: nil, cpuCount: 1, watchdogOversleepMs: 0, debuggerAttached: false, processStopped: false),
        capture: .init(
            signal: 41, sampleIntervalMs: 50, samplesTaken: 1, samplesDropped: 0, maxFrames: 128, pauseMedianUs: nil,
            pauseMaxUs: nil, errors: [], reportsSuppressed: 0))
}

@Suite struct SymbolicatorTests {
    @Test func demanglesSwiftAndCPlusPlusNames() {
        #expect(Demangler.demangle("$sSi") == "Swift.Int")
        #expect(Demangler.demangle("_ZN3foo3barEv") == "foo::bar()")
        #expect(Demangler.demangle("plain_c_function") == "plain_c_function")
        #expect(Demangler.demangle("$sNotReallyMangled!!") == "$sNotReallyMangled!!")
    }

    @Test func resolvesFramesOfThisBinaryWithAMatchingBuildID() throws {
        let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let buildID = try ImageSymbols(path: path, expectedBuildID: nil, debugDirectories: []).buildID
        try #require(buildID != nil)
        let (image, bias) = try thisExecutableImage(buildID: buildID)
        var hang = report(addresses: symbolicationProbe().filter { $0 > bias && $0 - bias < 0x1000_0000 }, image: image, bias: bias)
        let summary = Symbolicator().symbolicate(&hang)
        #expect(summary.imageErrors.isEmpty)
        #expect(summary.framesResolved > 0)
        let names = hang.frames.compactMap(\.symbol)
        #expect(names.contains { $0.contains("resolvesFramesOfThisBinaryWithAMatchingBuildID") }, "\(names)")
        // Line information from the debug build.
        #expect(hang.frames.contains { $0.file?.hasSuffix("SymbolicatorTests.swift") == true && $0.line != nil })
        // The heaviest stack's inline copy is symbolicated too.
        #expect(hang.heaviestStack?.frames.compactMap(\.symbol).isEmpty == false)
    }

    /// A sample in a procedure linkage table entry is named after the function the entry jumps to,
    /// as the binary's own disassembler names it (`objdump -d -j .plt`: `<f@plt>`), and marked.
    @Test func aLinkerStubIsNamedAfterTheFunctionItJumpsTo() throws {
        let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/objdump")
        process.arguments = ["-d", "-j", ".plt", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let objdump = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // `0000000000028f10 <$sSomething@plt>:` (the first entry, PLT0, has no name).
        let stubs = objdump.split(separator: "\n").compactMap { line -> (offset: UInt64, name: String)? in
            guard line.hasSuffix("@plt>:"), let space = line.firstIndex(of: " "), let offset = UInt64(line[..<space], radix: 16) else { return nil }
            let name = line[line.index(space, offsetBy: 2)..<line.index(line.endIndex, offsetBy: -"@plt>:".count)]
            return (offset, String(name))
        }
        try #require(stubs.count >= 10, "\(objdump.prefix(500))")
        let symbols = try ImageSymbols(path: path, expectedBuildID: nil, debugDirectories: [])
        for stub in stubs.prefix(40) {
            // Anywhere inside the 16-byte entry.
            let named = symbols.lookup(offset: stub.offset + 7)
            #expect(named?.symbol == Demangler.demangle(stub.name) + "@plt", "\(stub)")
            #expect(named.map { SymbolName.isLinkerStub($0.symbol) } == true)
        }
    }

    @Test func refusesABinaryWhoseBuildIDDoesNotMatch() throws {
        let (image, bias) = try thisExecutableImage(buildID: "00112233445566778899aabbccddeeff00112233")
        var hang = report(addresses: symbolicationProbe().filter { $0 > bias && $0 - bias < 0x1000_0000 }, image: image, bias: bias)
        let summary = Symbolicator().symbolicate(&hang)
        #expect(summary.framesResolved == 0)
        #expect(hang.frames.allSatisfy { $0.symbol == nil })
        guard case .buildIDMismatch? = summary.imageErrors[image.path] else {
            Issue.record("expected a build-id mismatch, got \(summary.imageErrors)")
            return
        }
    }

    @Test func oneSymbolicatorServesManyThreadsAtOnce() async throws {
        let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let buildID = try ImageSymbols(path: path, expectedBuildID: nil, debugDirectories: []).buildID
        let (image, bias) = try thisExecutableImage(buildID: buildID)
        let addresses = symbolicationProbe().filter { $0 > bias && $0 - bias < 0x1000_0000 }
        let symbolicator = Symbolicator()
        let names = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var hang = report(addresses: addresses, image: image, bias: bias)
                    for _ in 0..<20 { symbolicator.symbolicate(&hang) }
                    return hang.frames.compactMap(\.symbol)
                }
            }
            return await group.reduce(into: [[String]]()) { $0.append($1) }
        }
        #expect(names.count == 8)
        #expect(Set(names.map { $0.joined(separator: "|") }).count == 1)
        #expect(names[0].contains { $0.contains("oneSymbolicatorServesManyThreadsAtOnce") })
    }

    /// A report read on another machine: the binary is not at the report's path, but a copy is in
    /// a debug directory, under its build-id or its name. A copy with another build-id is refused.
    @Test func findsAMovedBinaryByBuildIDOrNameInADebugDirectory() throws {
        let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let buildID = try #require(try ImageSymbols(path: path, expectedBuildID: nil, debugDirectories: []).buildID)
        let (image, bias) = try thisExecutableImage(buildID: buildID)
        let addresses = symbolicationProbe().filter { $0 > bias && $0 - bias < 0x1000_0000 }
        var moved = image
        moved.path = "/nonexistent/build/" + (path as NSString).lastPathComponent

        let root = FileManager.default.temporaryDirectory.path + "/hangwatch-debugdir-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let byID = root + "/by-id/.build-id/" + buildID.prefix(2)
        try FileManager.default.createDirectory(atPath: byID, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: byID + "/" + buildID.dropFirst(2) + ".debug", withDestinationPath: path)
        try FileManager.default.createDirectory(atPath: root + "/by-name", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/by-name/" + (path as NSString).lastPathComponent, withDestinationPath: path)
        // Another ELF file under this build-id: must be refused.
        let wrongID = root + "/wrong/.build-id/" + buildID.prefix(2)
        try FileManager.default.createDirectory(atPath: wrongID, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: wrongID + "/" + buildID.dropFirst(2), withDestinationPath: "/bin/sh")

        for directory in [root + "/by-id", root + "/by-name"] {
            var hang = report(addresses: addresses, image: moved, bias: bias)
            let summary = Symbolicator(debugDirectories: [directory]).symbolicate(&hang)
            #expect(summary.imageErrors.isEmpty, "\(directory): \(summary.imageErrors)")
            #expect(hang.frames.contains { $0.symbol?.contains("findsAMovedBinaryByBuildID") == true }, "\(directory)")
        }
        var hang = report(addresses: addresses, image: moved, bias: bias)
        let summary = Symbolicator(debugDirectories: [root + "/wrong"]).symbolicate(&hang)
        #expect(summary.framesResolved == 0)
        guard case .buildIDMismatch(_, let expected, _)? = summary.imageErrors[moved.path] else {
            Issue.record("expected a build-id mismatch, got \(summary.imageErrors)")
            return
        }
        #expect(expected == buildID)
    }

    @Test func anImagePathThatIsAFIFOOrADirectoryIsNeverOpened() throws {
        let base = FileManager.default.temporaryDirectory.path + "/hangwatch-sym-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(mkfifo(base + "/app", 0o600) == 0)
        // A FIFO would block an open() for good: the symbolicator answers at once instead.
        let image = HangReport.Image(path: base + "/app", buildId: "aa", base: "0x0", size: 0, isMainExecutable: true)
        let answer = Mutex<ImageSymbolsError?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var hang = report(addresses: [0x1234], image: image, bias: 0)
            let summary = Symbolicator().symbolicate(&hang)
            answer.withLock { $0 = summary.imageErrors[base + "/app"] }
            done.signal()
        }
        if done.wait(timeout: .now() + 10) == .timedOut {
            // Blocked opening the FIFO: a writer lets it go, and the test fails instead of hanging.
            let writer = open(base + "/app", O_WRONLY)
            close(writer)
            done.wait()
            Issue.record("symbolication blocked on a FIFO")
        }
        #expect(answer.withLock { $0 } == .unreadable(path: base + "/app", reason: "not a regular file"))
        let directory = HangReport.Image(path: base, buildId: "aa", base: "0x0", size: 0, isMainExecutable: true)
        var second = report(addresses: [0x1234], image: directory, bias: 0)
        #expect(Symbolicator().symbolicate(&second).imageErrors[base] == .unreadable(path: base, reason: "not a regular file"))
    }

    @Test func aMissingBinaryIsNamed() {
        let image = HangReport.Image(path: "/nonexistent/app", buildId: "aa", base: "0x0", size: 0, isMainExecutable: true)
        var hang = report(addresses: [0x1234], image: image, bias: 0)
        let summary = Symbolicator().symbolicate(&hang)
        #expect(summary.imageErrors["/nonexistent/app"] == .fileNotFound("/nonexistent/app"))
        #expect("\(ImageSymbolsError.fileNotFound("/x"))".contains("--debug-dir"))
    }
}
