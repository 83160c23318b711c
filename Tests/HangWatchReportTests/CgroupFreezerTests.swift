@_spi(Internal) import HangWatchReport
import Testing

/// The freezer's files, v1 and v2: real files of the project's VM
/// (`/work/proto/containers/samples/`: `v1-freezer-hwproto-frozen/`, `v2-unified-hwproto/`,
/// `v2-unified-hwproto-frozen/`).
@Suite struct CgroupFreezerTests {
    @Test func theV1StateIsOneWord() {
        #expect(CgroupFreezer.parseV1State("FROZEN\n") == .frozen)
        #expect(CgroupFreezer.parseV1State("FREEZING\n")?.isFreezing == true)
        #expect(CgroupFreezer.parseV1State("THAWED\n") == .thawed)
        #expect(CgroupFreezer.parseV1State("THAWED\n")?.isFreezing == false)
        for bad in ["", "frozen", "FROZEN FROZEN", "1"] {
            #expect(CgroupFreezer.parseV1State(bad) == nil, "\(bad)")
        }
    }

    @Test func v2EventsSayWhetherFrozen() {
        #expect(CgroupFreezer.parseV2Frozen("populated 1\nfrozen 1\n") == true)
        #expect(CgroupFreezer.parseV2Frozen("populated 1\nfrozen 0\n") == false)
        #expect(CgroupFreezer.parseV2Frozen("populated 1\n") == nil)
    }

    @Test func frozenMicrosecondsAreReadFromStatLocal() {
        #expect(CgroupFreezer.parseFrozenMicroseconds("frozen_usec 5459592\n") == 5_459_592)
        // A file without it (a kernel before 6.18 has no such line; a v1 cpu.stat.local's key differs).
        #expect(CgroupFreezer.parseFrozenMicroseconds("throttled_time 32688160322\n") == nil)
        #expect(CgroupFreezer.parseFrozenMicroseconds("") == nil)
    }
}
