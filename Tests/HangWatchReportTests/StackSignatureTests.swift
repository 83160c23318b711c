import HangWatchReport
import Testing

@Suite struct StackSignatureTests {
    let images = [
        HangReport.Image(path: "/srv/app/app", buildId: "aa", base: "0x1000", size: 100, isMainExecutable: true),
        HangReport.Image(path: "/usr/lib/x86_64-linux-gnu/libc.so.6", buildId: "bb", base: "0x9000", size: 100, isMainExecutable: false),
        HangReport.Image(path: "/opt/swift/usr/lib/swift/linux/libFoundation.so", buildId: "cc", base: "0xa000", size: 100, isMainExecutable: false),
    ]

    func frame(_ image: Int, _ offset: String, address: String = "0x1") -> HangReport.Frame {
        HangReport.Frame(address: address, image: image, offset: offset)
    }

    @Test func ignoresSystemFramesAndAddressesThatMoveWithASLR() {
        let first = [frame(1, "0x10", address: "0x9010"), frame(0, "0x20", address: "0x1020"), frame(2, "0x30")]
        let second = [frame(1, "0x44", address: "0x7010"), frame(0, "0x20", address: "0x5020"), frame(2, "0x99")]
        #expect(StackSignature.compute(frames: first, images: images) == StackSignature.compute(frames: second, images: images))
    }

    @Test func differentAppFramesDiffer() {
        let first = [frame(0, "0x20"), frame(0, "0x30")]
        let second = [frame(0, "0x20"), frame(0, "0x31")]
        #expect(StackSignature.compute(frames: first, images: images) != StackSignature.compute(frames: second, images: images))
    }

    @Test func aStackWithOnlySystemFramesStillHasASignature() {
        let frames = [frame(1, "0x10"), frame(2, "0x20")]
        let signature = StackSignature.compute(frames: frames, images: images)
        #expect(signature.count == 16)
        #expect(signature != StackSignature.compute(frames: [frame(1, "0x11"), frame(2, "0x20")], images: images))
    }

    @Test func recognisesSystemImages() {
        #expect(StackSignature.isSystemImage("/lib/x86_64-linux-gnu/libc.so.6"))
        #expect(StackSignature.isSystemImage("/opt/swift/usr/lib/swift/linux/libswiftCore.so"))
        #expect(StackSignature.isSystemImage("linux-vdso.so.1"))
        #expect(!StackSignature.isSystemImage("/srv/app/.build/release/app"))
    }
}
