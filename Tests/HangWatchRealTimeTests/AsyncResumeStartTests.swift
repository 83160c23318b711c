import Foundation
@testable import HangWatch
import HangWatchTestSupport
import Testing

/// An async caller's resume address is read from the heap, so it names a frame only when it is
/// provably a function's first instruction. Checked against every async resume function of the
/// loaded Swift concurrency runtime and of this test binary, as `nm` lists them.
@Suite struct AsyncResumeStartTests {
    let images = UnsafeImageMapReader.read()

    /// The loaded addresses of `image`'s async resume functions (mangled names ending `TQn_` or
    /// `TYn_`: the parts of async functions that continue after a suspension).
    func resumeFunctions(of image: ImageMap.Image) throws -> [UInt] {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/nm"), "nm is missing (binutils)")
        let nm = try ExecutableRun.run("/usr/bin/nm", ["--defined-only", image.path])
        try #require(nm.status == 0, "\(nm.errors)")
        return nm.lines.compactMap { line -> UInt? in
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[1] == "t" || parts[1] == "T", let value = UInt(parts[0], radix: 16),
                parts[2].wholeMatch(of: /.*T[QY][0-9]+_/) != nil
            else { return nil }
            return image.bias &+ value
        }
    }

    @Test func everyResumeFunctionOfTheConcurrencyRuntimeIsProvenEvenWhereItsUnwindTableHasNoEntry() throws {
        let runtime = try #require(images.images.first { $0.path.hasSuffix("/libswift_Concurrency.so") })
        let starts = try resumeFunctions(of: runtime)
        #expect(starts.count > 100, "\(starts.count)")
        for start in starts {
            #expect(images.isAsyncResumeStart(start), "\(String(start &- runtime.bias, radix: 16))")
            #expect(!images.isAsyncResumeStart(start + 1))
        }
        // Swift 6.3.1's runtime: `TaskLocal.withValueImpl`'s resume functions (which Hummingbird's
        // handlers run under) have no unwind-table entry; they are proven by their prologue. The
        // chain stopped at them before.
        let withoutEntry = starts.filter { images.functionStart(of: $0) == nil }
        let segments = runtime.unwindSegments
        #expect(withoutEntry.allSatisfy { start in segments.contains { AsyncPrologue.begins(at: start, in: $0.range) } })
    }

    @Test func theResumeFunctionsOfThisPackageAreProvenAndMostBeginWithTheAsyncPrologue() throws {
        let binary = try #require(images.images.first { $0.isMainExecutable })
        let starts = try resumeFunctions(of: binary)
        #expect(starts.count > 100, "\(starts.count)")
        for start in starts where !images.isAsyncResumeStart(start) {
            Issue.record("not proven: \(String(start &- binary.bias, radix: 16))")
        }
        // With frame pointers (SwiftPM's default) the prologue is the rule; seen: 8527 of 8652 in
        // a debug build (the others, in dependencies, start `sub $n,%rsp` and have table entries).
        let segments = binary.unwindSegments
        let matching = starts.filter { start in segments.contains { AsyncPrologue.begins(at: start, in: $0.range) } }
        #expect(Double(matching.count) >= 0.9 * Double(starts.count), "\(matching.count) of \(starts.count)")
    }

    @Test func otherCodeDoesNotLookLikeAnAsyncFunction() {
        // A C function's frame (`push %rbp; mov %rsp,%rbp`), the async prologue one byte short, then
        // the prologue itself and with the extended-frame marking before it.
        #expect(!AsyncPrologue.begins([0x55, 0x48, 0x89, 0xe5, 0x41, 0x57, 0x41, 0x56]))
        #expect(!AsyncPrologue.begins([0x55, 0x41, 0x56, 0x48, 0x8d, 0x6c, 0x24]))
        #expect(AsyncPrologue.begins([0x55, 0x41, 0x56, 0x48, 0x8d, 0x6c, 0x24, 0x08, 0x53]))
        #expect(AsyncPrologue.begins([0x48, 0x0f, 0xba, 0xed, 0x3c, 0x55, 0x41, 0x56, 0x48, 0x8d, 0x6c, 0x24, 0x08]))
    }
}
