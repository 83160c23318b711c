import CLinkMap
import Foundation

/// Reads the loaded images through the dynamic loader (`dl_iterate_phdr`): program headers,
/// GNU build-id notes and `.eh_frame_hdr` tables, straight from mapped memory.
///
/// Touches raw memory (hence the name). Runs on the watchdog, never in a signal handler and never
/// while the monitored loop is hung (a thread stuck inside `dlopen` may hold the loader lock).
enum UnsafeImageMapReader {
    static func read() -> ImageMap {
        final class Collector {
            var images: [ImageMap.Image] = []
            let executablePath = ProcessSnapshot.executablePath()
        }
        let collector = Collector()
        withExtendedLifetime(collector) {
            _ = hw_dl_iterate_phdr(
                { info, size, context in
                    guard let info, let context, size >= MemoryLayout<hw_dl_phdr_info>.size else { return 0 }
                    let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
                    if let image = UnsafeImageMapReader.image(from: info.pointee, executablePath: collector.executablePath) {
                        collector.images.append(image)
                    }
                    return 0
                }, Unmanaged.passUnretained(collector).toOpaque())
        }
        return ImageMap(images: collector.images)
    }

    private static func image(from info: hw_dl_phdr_info, executablePath: String) -> ImageMap.Image? {
        guard let headers = info.dlpi_phdr, info.dlpi_phnum > 0 else { return nil }
        let bias = UInt(info.dlpi_addr)
        let name = info.dlpi_name.map { String(cString: $0) } ?? ""
        let isMain = name.isEmpty
        var segments: [Range<UInt>] = []
        var executable: [Range<UInt>] = []
        var buildID: String?
        var ehFrameHeader: UInt?
        var globalPointer: UInt = 0
        for i in 0..<Int(info.dlpi_phnum) {
            let header = headers[i]
            let start = bias &+ UInt(header.p_vaddr)
            switch header.p_type {
            case UInt32(PT_LOAD):
                guard header.p_memsz > 0 else { continue }
                let range = start..<(start &+ UInt(header.p_memsz))
                segments.append(range)
                if header.p_flags & UInt32(PF_X) != 0 { executable.append(range) }
            case UInt32(PT_NOTE):
                if buildID == nil { buildID = readBuildID(notes: start, size: UInt(header.p_filesz)) }
            case UInt32(PT_GNU_EH_FRAME):
                ehFrameHeader = start
            case UInt32(PT_DYNAMIC):
                globalPointer = readPLTGOT(dynamic: start) ?? 0
            default:
                break
            }
        }
        guard !segments.isEmpty else { return nil }
        var unwindSegments: [ImageMap.UnwindSegment] = []
        if let ehFrameHeader, let table = readSearchTable(header: ehFrameHeader) {
            unwindSegments = executable.map {
                ImageMap.UnwindSegment(
                    range: $0, globalPointer: globalPointer, ehFrameHeader: ehFrameHeader, tableData: table.data,
                    tableWords: table.words)
            }
        }
        return ImageMap.Image(
            path: isMain ? executablePath : name, buildID: buildID, bias: bias, segments: segments,
            unwindSegments: unwindSegments, isMainExecutable: isMain)
    }

    /// The NT_GNU_BUILD_ID note among the notes at `address`.
    private static func readBuildID(notes address: UInt, size: UInt) -> String? {
        guard let base = UnsafeRawPointer(bitPattern: address) else { return nil }
        var offset: UInt = 0
        func align4(_ value: UInt) -> UInt { (value + 3) & ~3 }
        while offset + 12 <= size {
            let nameSize = UInt(base.loadUnaligned(fromByteOffset: Int(offset), as: UInt32.self))
            let descriptionSize = UInt(base.loadUnaligned(fromByteOffset: Int(offset) + 4, as: UInt32.self))
            let type = base.loadUnaligned(fromByteOffset: Int(offset) + 8, as: UInt32.self)
            let nameStart = offset + 12
            let descriptionStart = nameStart + align4(nameSize)
            let next = descriptionStart + align4(descriptionSize)
            guard next <= size, nameSize <= 64, descriptionSize <= 1024 else { return nil }
            if type == UInt32(NT_GNU_BUILD_ID) && nameSize == 4
                && base.loadUnaligned(fromByteOffset: Int(nameStart), as: UInt32.self) == 0x0055_4e47  // "GNU\0"
            {
                let bytes = UnsafeRawBufferPointer(start: base + Int(descriptionStart), count: Int(descriptionSize))
                return bytes.map { String($0, radix: 16).leftPadded(2) }.joined()
            }
            offset = next
        }
        return nil
    }

    /// DT_PLTGOT from the dynamic section (relocated by the loader on x86_64 and aarch64).
    private static func readPLTGOT(dynamic address: UInt) -> UInt? {
        guard var entry = UnsafePointer<Elf64_Dyn>(bitPattern: address) else { return nil }
        for _ in 0..<4096 {
            let tag = entry.pointee.d_tag
            if tag == Int64(DT_NULL) { return nil }
            if tag == Int64(DT_PLTGOT) { return UInt(entry.pointee.d_un.d_ptr) }
            entry += 1
        }
        return nil
    }

    /// Where the binary-search table of an `.eh_frame_hdr` starts and its length in words. Only the
    /// standard encoding (data-relative signed 4-byte entries) is supported; other images are left
    /// without a table and the unwinder stops at their frames.
    private static func readSearchTable(header address: UInt) -> (data: UInt, words: UInt)? {
        guard let base = UnsafeRawPointer(bitPattern: address) else { return nil }
        let version = base.load(fromByteOffset: 0, as: UInt8.self)
        let framePointerEncoding = base.load(fromByteOffset: 1, as: UInt8.self)
        let countEncoding = base.load(fromByteOffset: 2, as: UInt8.self)
        let tableEncoding = base.load(fromByteOffset: 3, as: UInt8.self)
        guard version == 1, tableEncoding == 0x3b, let frameSize = encodedSize(framePointerEncoding),
            let countSize = encodedSize(countEncoding)
        else { return nil }
        let countOffset = 4 + frameSize
        let count: UInt
        switch countSize {
        case 4: count = UInt(base.loadUnaligned(fromByteOffset: countOffset, as: UInt32.self))
        case 8: count = UInt(base.loadUnaligned(fromByteOffset: countOffset, as: UInt64.self))
        default: return nil
        }
        // Each entry is two 4-byte values: 8 bytes, one 64-bit word.
        return (data: address + UInt(countOffset + countSize), words: count * 8 / UInt(MemoryLayout<UInt>.size))
    }

    /// Start of the function containing `address`, from the `.eh_frame_hdr` search table of
    /// `segment` (entries are sorted pairs of 4-byte offsets from the header: function start, FDE).
    /// Nil when the nearest entry's FDE does not cover `address` (code without unwind information,
    /// such as small leaf functions, sits between FDEs).
    static func functionStart(of address: UInt, in segment: ImageMap.UnwindSegment) -> UInt? {
        guard segment.range.contains(address), segment.tableWords > 0,
            let table = UnsafeRawPointer(bitPattern: segment.tableData)
        else { return nil }
        let header = Int(bitPattern: segment.ehFrameHeader)
        func entry(_ index: Int, _ field: Int) -> UInt {
            UInt(bitPattern: header + Int(table.loadUnaligned(fromByteOffset: index * 8 + field * 4, as: Int32.self)))
        }
        var low = 0
        var high = Int(segment.tableWords)
        while low < high {
            let mid = (low + high) / 2
            if entry(mid, 0) <= address { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return nil }
        let start = entry(low - 1, 0)
        if let length = descriptionLength(fde: entry(low - 1, 1)), address >= start + length {
            return nil
        }
        return start
    }

    /// The address range length (`pc_range`) of the FDE at `address`, when its encoding is one this
    /// reader knows (4- or 8-byte values, as compilers emit); nil otherwise.
    private static func descriptionLength(fde address: UInt) -> UInt? {
        guard let fde = UnsafeRawPointer(bitPattern: address) else { return nil }
        let length = fde.loadUnaligned(as: UInt32.self)
        guard length != 0, length != 0xffff_ffff else { return nil }
        let cieOffset = fde.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
        guard let cie = UnsafeRawPointer(bitPattern: address + 4 - UInt(cieOffset)),
            let encoding = pointerEncoding(cie: cie), let size = encodedSize(encoding)
        else { return nil }
        // FDE: length(4) CIE pointer(4) pc_begin(size) pc_range(size, no pointer adjustment).
        switch size {
        case 4: return UInt(fde.loadUnaligned(fromByteOffset: 8 + 4, as: UInt32.self))
        case 8: return UInt(fde.loadUnaligned(fromByteOffset: 8 + 8, as: UInt64.self))
        default: return nil
        }
    }

    /// The FDE pointer encoding from a CIE's augmentation ('R'), absptr when there is none.
    private static func pointerEncoding(cie: UnsafeRawPointer) -> UInt8? {
        guard cie.loadUnaligned(fromByteOffset: 4, as: UInt32.self) == 0 else { return nil }  // a CIE
        var offset = 9  // length(4) id(4) version(1)
        var augmentation: [UInt8] = []
        while true {
            let byte = cie.load(fromByteOffset: offset, as: UInt8.self)
            offset += 1
            if byte == 0 { break }
            augmentation.append(byte)
            if augmentation.count > 8 { return nil }
        }
        guard augmentation.first == UInt8(ascii: "z") else { return augmentation.isEmpty ? 0 : nil }
        func uleb() -> UInt {
            var value: UInt = 0
            var shift: UInt = 0
            while shift < 63 {
                let byte = cie.load(fromByteOffset: offset, as: UInt8.self)
                offset += 1
                value |= UInt(byte & 0x7f) << shift
                if byte & 0x80 == 0 { break }
                shift += 7
            }
            return value
        }
        _ = uleb()  // code alignment
        _ = uleb()  // data alignment (sleb; only skipped)
        _ = uleb()  // return address register
        _ = uleb()  // augmentation data length
        for letter in augmentation.dropFirst() {
            switch letter {
            case UInt8(ascii: "R"):
                return cie.load(fromByteOffset: offset, as: UInt8.self)
            case UInt8(ascii: "L"):
                offset += 1
            case UInt8(ascii: "P"):
                let personalityEncoding = cie.load(fromByteOffset: offset, as: UInt8.self)
                offset += 1 + (encodedSize(personalityEncoding) ?? 8)
            default:
                return nil
            }
        }
        return 0
    }

    private static func encodedSize(_ encoding: UInt8) -> Int? {
        switch encoding & 0x0f {
        case 0x00, 0x04, 0x0c: return 8  // absptr, udata8, sdata8
        case 0x03, 0x0b: return 4  // udata4, sdata4
        case 0x02, 0x0a: return 2  // udata2, sdata2
        default: return nil
        }
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
