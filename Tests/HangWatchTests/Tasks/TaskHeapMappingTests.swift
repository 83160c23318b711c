@testable import HangWatch
import Testing

/// Which mappings the scan reads: private, writable, backed by no file.
@Suite struct TaskHeapMappingTests {
    static let maps = """
        55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]
        7f1200000000-7f1200021000 rw-p 00000000 00:00 0 
        7f1200021000-7f1204000000 ---p 00000000 00:00 0 
        7f1210000000-7f1210200000 rw-p 00000000 00:00 0                          [anon:libc_malloc]
        7f1220000000-7f1220001000 rw-s 00000000 00:05 1234                       /dev/shm/heartbeat
        7f1230000000-7f1230100000 rw-p 00003000 fd:01 4567                       /usr/lib/libswift_Concurrency.so
        7f1240000000-7f1240001000 r--p 00000000 00:00 0 
        7ffd10000000-7ffd10021000 rw-p 00000000 00:00 0                          [stack]
        7ffd10100000-7ffd10102000 r--p 00000000 00:00 0                          [vvar]
        ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
        garbage line
        """

    @Test func theHeapArenasAnonymousMappingsAndStacksAreScannedNothingElse() {
        let mappings = TaskHeapMapping.parse(maps: Self.maps)
        #expect(
            mappings == [
                TaskHeapMapping(start: 0x55d0_c0a0_0000, end: 0x55d0_c0a2_1000), TaskHeapMapping(start: 0x7f12_0000_0000, end: 0x7f12_0002_1000),
                TaskHeapMapping(start: 0x7f12_1000_0000, end: 0x7f12_1020_0000), TaskHeapMapping(start: 0x7ffd_1000_0000, end: 0x7ffd_1002_1000),
            ], "\(mappings)")
    }
}
