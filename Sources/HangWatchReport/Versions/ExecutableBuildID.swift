#if canImport(Glibc)
import Glibc
#endif

/// The GNU build-id note of an ELF64 little-endian file, read from its program headers (a few
/// kilobytes at most, never the whole file): the one `readelf -n` shows as `Build ID`.
enum ExecutableBuildID {
    /// Lowercase hex, or nil when the file is not such an ELF file or has no build-id note.
    static func read(path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        func bytes(at offset: UInt64, count: Int) -> [UInt8]? {
            guard count > 0, count <= 1 << 16, offset < UInt64(Int.max) else { return nil }
            var buffer = [UInt8](repeating: 0, count: count)
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            return got == count ? buffer : nil
        }
        guard let header = bytes(at: 0, count: 64), header[0..<4] == [0x7f, 0x45, 0x4c, 0x46],
            header[4] == 2, header[5] == 1  // ELFCLASS64, little-endian
        else { return nil }
        let programHeaders = integer(header, 32, 8)
        let entrySize = Int(integer(header, 54, 2))
        let count = Int(integer(header, 56, 2))
        guard entrySize >= 56, count > 0, let table = bytes(at: programHeaders, count: entrySize * count) else { return nil }
        for index in 0..<count {
            let entry = index * entrySize
            guard integer(table, entry, 4) == 4 else { continue }  // PT_NOTE
            guard let notes = bytes(at: integer(table, entry + 8, 8), count: Int(min(integer(table, entry + 32, 8), 1 << 16)))
            else { continue }
            var cursor = 0
            while cursor + 12 <= notes.count {
                let nameSize = Int(integer(notes, cursor, 4))
                let descriptionSize = Int(integer(notes, cursor + 4, 4))
                let type = integer(notes, cursor + 8, 4)
                let name = cursor + 12
                let description = name + (nameSize + 3) & ~3
                guard nameSize <= 256, descriptionSize <= 1024, description + descriptionSize <= notes.count else { break }
                if type == 3, nameSize == 4, notes[name..<name + 4] == [0x47, 0x4e, 0x55, 0], descriptionSize > 0 {  // NT_GNU_BUILD_ID, "GNU"
                    return notes[description..<description + descriptionSize].map { hex($0) }.joined()
                }
                cursor = description + (descriptionSize + 3) & ~3
            }
        }
        return nil
    }

    private static func integer(_ bytes: [UInt8], _ offset: Int, _ width: Int) -> UInt64 {
        guard offset >= 0, offset + width <= bytes.count else { return 0 }
        var value: UInt64 = 0
        for index in (0..<width).reversed() { value = value << 8 | UInt64(bytes[offset + index]) }
        return value
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
    }
}
