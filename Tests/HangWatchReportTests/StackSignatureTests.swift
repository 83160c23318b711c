import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct StackSignatureTests {
    let images = [
        HangReport.Image(path: "/srv/app/app", buildId: "aa", base: "0x1000", size: 100, isMainExecutable: true),
        HangReport.Image(path: "/usr/lib/x86_64-linux-gnu/libc.so.6", buildId: "bb", base: "0x9000", size: 100, isMainExecutable: false),
        HangReport.Image(path: "/opt/swift/usr/lib/swift/linux/libFoundation.so", buildId: "cc", base: "0xa000", size: 100, isMainExecutable: false),
    ]

    func app(_ offset: String, function: String? = nil, address: String = "0x1") -> HangReport.Frame {
        HangReport.Frame(address: address, image: 0, offset: offset, functionOffset: function ?? offset)
    }
    func libc(_ offset: String) -> HangReport.Frame { HangReport.Frame(address: "0x2", image: 1, offset: offset, functionOffset: offset) }
    func foundation(_ offset: String) -> HangReport.Frame { HangReport.Frame(address: "0x3", image: 2, offset: offset, functionOffset: offset) }

    /// The outermost frames of a main thread: main, two libc frames, _start.
    var entry: [HangReport.Frame] { [app("0x900"), libc("0x100"), libc("0x200"), app("0x10")] }
    /// The run loop between a callback and main.
    var runLoop: [HangReport.Frame] { [foundation("0x500"), foundation("0x600"), foundation("0x700")] }

    func signature(_ frames: [HangReport.Frame], complete: Bool = true) -> String {
        StackSignature.compute(frames: frames, images: images, complete: complete)
    }

    @Test func twoCallPathsToTheSameBlockingCallDiffer() {
        // read <- blockingRead <- handlerMiddle <- handlerOuter, and read <- blockingRead <- otherHandler.
        let first = [libc("0x30"), app("0x120"), app("0x230"), app("0x340")] + runLoop + entry
        let second = [libc("0x30"), app("0x120"), app("0x450")] + runLoop + entry
        #expect(signature(first) != signature(second))
    }

    @Test func twoCallSitesInOneFunctionDiffer() {
        let first = [libc("0x30"), app("0x124", function: "0x100"), app("0x340")] + runLoop + entry
        let second = [libc("0x30"), app("0x188", function: "0x100"), app("0x340")] + runLoop + entry
        #expect(signature(first) != signature(second))
    }

    /// A computing loop sampled in its own code and in a system function it calls is one problem
    /// (seen: a Hummingbird route's spin loop gave two reports, one for the samples inside
    /// `clock_gettime`); a blocked thread keeps its call site.
    @Test func aComputingFunctionAgreesWithItselfInASystemCallItMakes() {
        let inClock = [libc("0x30"), app("0x124", function: "0x100"), app("0x340")] + runLoop + entry
        let inLoop = [app("0x13c", function: "0x100"), app("0x340")] + runLoop + entry
        #expect(StackSignature.compute(frames: inClock, images: images, computing: true) == StackSignature.compute(frames: inLoop, images: images, computing: true))
        #expect(signature(inClock) != signature(inLoop))
        let otherSite = [libc("0x30"), app("0x188", function: "0x100"), app("0x340")] + runLoop + entry
        #expect(StackSignature.compute(frames: inClock, images: images, computing: true) == StackSignature.compute(frames: otherSite, images: images, computing: true))
    }

    @Test func samplesAtDifferentInstructionsOfTheInnermostFunctionAgree() {
        let first = [app("0x124", function: "0x100"), app("0x340")] + runLoop + entry
        let second = [app("0x13c", function: "0x100"), app("0x340")] + runLoop + entry
        #expect(signature(first) == signature(second))
    }

    @Test func systemInternalsAndASLRDoNotChangeIt() {
        let first = [libc("0x30"), libc("0x40"), app("0x120", address: "0x5120"), app("0x340")] + runLoop + entry
        let second = [libc("0x77"), app("0x120", address: "0x9120"), app("0x340")] + runLoop + entry
        #expect(signature(first) == signature(second))
    }

    @Test func hangsWhoseOnlyAppFramesAreTheEntryAreToldApartByTheirSystemFrames() {
        // A JSONDecoder and a formatter, both called from the run loop with no app frame between:
        // app frames alone (main, _start) would give every such hang one signature.
        let decoding = [foundation("0x800"), foundation("0x810")] + runLoop + entry
        let formatting = [foundation("0x900"), foundation("0x910")] + runLoop + entry
        #expect(signature(decoding) != signature(formatting))
        #expect(signature(decoding) != signature(entry))
    }

    @Test func aTruncatedStackNeverSharesTheSignatureOfACompleteOne() {
        let frames = [libc("0x30"), app("0x120"), app("0x340")]
        #expect(signature(frames, complete: false) != signature(frames, complete: true))
        #expect(signature(frames, complete: false) == signature(frames, complete: false))
    }

    @Test func aStackWithOnlySystemFramesStillHasASignature() {
        let frames = [libc("0x10"), foundation("0x20")]
        let signature = self.signature(frames)
        #expect(signature.count == 16)
        #expect(signature != self.signature([libc("0x11"), foundation("0x20")]))
    }

    @Test func recognisesSystemImages() {
        #expect(StackSignature.isSystemImage("/lib/x86_64-linux-gnu/libc.so.6"))
        #expect(StackSignature.isSystemImage("/opt/swift/usr/lib/swift/linux/libswiftCore.so"))
        #expect(StackSignature.isSystemImage("linux-vdso.so.1"))
        #expect(!StackSignature.isSystemImage("/srv/app/.build/release/app"))
    }
}
