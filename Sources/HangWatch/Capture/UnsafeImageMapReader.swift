import CLinkMap
import Foundation

/// Reads the loaded images through the dynamic loader (`dl_iterate_phdr`): program headers,
/// GNU build-id notes and `.eh_frame_hdr` tables, straight from mapped memory.
///
/// Touches raw memory (hence the name). Runs on the watchdog, never in a signal handler and never
/// while the monitored loop is hung (a thread stuck inside `dlopen` may hold the loader lock).
enum UnsafeImageMapReader {
    static func read() -> ImageMap {
        var images: [ImageMap.Image] = []
        let executablePath = ProcessSnapshot.executablePath()
        forEachLoadedImage { info in
            if let image = image(from: info, executablePath: executablePath) { images.append(image) }
            return true
        }
        return ImageMap(images: images)
    }

    /// Calls `body` with each image the dynamic loader lists (`dl_iterate_phdr`, the loader's lock
    /// held meanwhile) until it returns false.
    static func forEachLoadedImage(_ body: (hw_dl_phdr_info) -> Bool) {
        withoutActuallyEscaping(body) { body in
            final class Visitor {
                let body: (hw_dl_phdr_info) -> Bool
                init(_ body: @escaping (hw_dl_phdr_info) -> Bool) { self.body = body }
            }
            let visitor = Visitor(body)
            withExtendedLifetime(visitor) {
                _ = hw_dl_iterate_phdr(
                    { info, size, context in
                        guard let info, let context, size >= MemoryLayout<hw_dl_phdr_info>.size else { return 0 }
                        return Unmanaged<Visitor>.fromOpaque(context).takeUnretainedValue().body(info.pointee) ? 0 : 1
                    }, Unmanaged.passUnretained(visitor).toOpaque())
            }
        }
    }

    private static func image(from info: hw_dl_phdr_info, executablePath: String) -> ImageMap.Image? {
        guard let headers = info.dlpi_phdr, info.dlpi_phnum > 0 else { return nil }
        let name = info.dlpi_name.map { String(cString: $0) } ?? ""
        let isMain = name.isEmpty
        return image(
            headers: UnsafeBufferPointer(start: headers, count: Int(info.dlpi_phnum)), bias: UInt(info.dlpi_addr),
            name: isMain ? executablePath : name, isMain: isMain, memory: UnsafeLoadedMemory.self)
    }

    /// The image described by its program headers, loaded at `bias`; its notes, dynamic section and
    /// unwind table are read through `memory`.
    static func image<Memory: ImageMemory>(
        headers: UnsafeBufferPointer<Elf64_Phdr>, bias: UInt, name: String, isMain: Bool, memory: Memory.Type
    ) -> ImageMap.Image? {
        var segments: [Range<UInt>] = []
        var executable: [Range<UInt>] = []
        var buildID: String?
        var ehFrameHeader: UInt?
        var globalPointer: UInt = 0
        for header in headers {
            let start = bias &+ UInt(header.p_vaddr)
            switch header.p_type {
            case UInt32(PT_LOAD):
                guard header.p_memsz > 0 else { continue }
                let range = start..<(start &+ UInt(header.p_memsz))
                segments.append(range)
                if header.p_flags & UInt32(PF_X) != 0 { executable.append(range) }
            case UInt32(PT_NOTE):
                if buildID == nil { buildID = readBuildID(notes: start, size: UInt(header.p_filesz), memory: memory) }
            case UInt32(PT_GNU_EH_FRAME):
                ehFrameHeader = start
            case UInt32(PT_DYNAMIC):
                globalPointer = readPLTGOT(dynamic: start, size: UInt(header.p_memsz), memory: memory) ?? 0
            default:
                break
            }
        }
        guard !segments.isEmpty else { return nil }
        var unwindSegments: [ImageMap.UnwindSegment] = []
        var memorySymbols: [ImageMap.MemorySymbol] = []
        if name.hasPrefix("linux-vdso"), let dynamic = headers.first(where: { $0.p_type == UInt32(PT_DYNAMIC) }) {
            memorySymbols = readDynamicSymbols(
                dynamic: bias &+ UInt(dynamic.p_vaddr), size: UInt(dynamic.p_memsz), bias: bias, memory: memory)
        }
        if let ehFrameHeader, let table = readSearchTable(header: ehFrameHeader, memory: memory) {
            unwindSegments = executable.map {
                ImageMap.UnwindSegment(
                    range: $0, globalPointer: globalPointer, ehFrameHeader: ehFrameHeader, tableData: table.data,
                    tableWords: table.words)
            }
        }
        return ImageMap.Image(
            path: name, buildID: buildID, bias: bias, segments: segments, unwindSegments: unwindSegments,
            isMainExecutable: isMain, memorySymbols: memorySymbols)
    }

    /// The function symbols of the dynamic symbol table (DT_SYMTAB, DT_STRTAB, sized by DT_HASH),
    /// global ones first for an address that has several names (`__vdso_clock_gettime` before its
    /// weak alias `clock_gettime`). Only for the vDSO: a small table in memory that no file holds.
    private static func readDynamicSymbols<Memory: ImageMemory>(
        dynamic address: UInt, size: UInt, bias: UInt, memory: Memory.Type
    ) -> [ImageMap.MemorySymbol] {
        let entrySize = MemoryLayout<Elf64_Dyn>.size
        let count = Int(min(size, 4096)) / entrySize
        guard count > 0, let raw = memory.bytes(at: address, count: count * entrySize) else { return [] }
        var symbolTable: UInt?, stringTable: UInt?, hashTable: UInt?, stringSize = 0
        raw.withUnsafeBytes { bytes in
            for index in 0..<count {
                let entry = bytes.loadUnaligned(fromByteOffset: index * entrySize, as: Elf64_Dyn.self)
                if entry.d_tag == Int64(DT_NULL) { break }
                // The vDSO's dynamic section holds file addresses: the loader does not relocate it.
                let value = UInt(entry.d_un.d_ptr)
                let absolute = value < bias ? bias &+ value : value
                switch entry.d_tag {
                case Int64(DT_SYMTAB): symbolTable = absolute
                case Int64(DT_STRTAB): stringTable = absolute
                case Int64(DT_HASH): hashTable = absolute
                case Int64(DT_STRSZ): stringSize = Int(min(entry.d_un.d_val, 4096))
                default: break
                }
            }
        }
        guard let symbolTable, let stringTable, let hashTable,
            let header = memory.bytes(at: hashTable, count: 8)
        else { return [] }
        let symbolCount = Int(header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self) })
        let symbolSize = MemoryLayout<Elf64_Sym>.size
        guard symbolCount > 0, symbolCount <= 512, let symbols = memory.bytes(at: symbolTable, count: symbolCount * symbolSize),
            let strings = memory.bytes(at: stringTable, count: stringSize)
        else { return [] }
        var found: [(symbol: ImageMap.MemorySymbol, global: Bool)] = []
        symbols.withUnsafeBytes { bytes in
            for index in 0..<symbolCount {
                let symbol = bytes.loadUnaligned(fromByteOffset: index * symbolSize, as: Elf64_Sym.self)
                guard symbol.st_info & 0xf == UInt8(STT_FUNC), symbol.st_value != 0, Int(symbol.st_name) < strings.count
                else { continue }
                let nameBytes = strings[Int(symbol.st_name)...].prefix { $0 != 0 }
                found.append(
                    (ImageMap.MemorySymbol(start: UInt(symbol.st_value), size: UInt(symbol.st_size), name: String(decoding: nameBytes, as: UTF8.self)),
                     symbol.st_info >> 4 == UInt8(STB_GLOBAL)))
            }
        }
        return found.sorted { ($0.global ? 0 : 1, $0.symbol.start) < ($1.global ? 0 : 1, $1.symbol.start) }.map(\.symbol)
    }

    /// The NT_GNU_BUILD_ID note among the notes at `address`.
    private static func readBuildID<Memory: ImageMemory>(notes address: UInt, size: UInt, memory: Memory.Type) -> String? {
        guard size >= 12, size <= 1 << 16, let notes = memory.bytes(at: address, count: Int(size)) else { return nil }
        return notes.withUnsafeBytes { base -> String? in
            var offset = 0
            func align4(_ value: Int) -> Int { (value + 3) & ~3 }
            while offset + 12 <= notes.count {
                let nameSize = Int(base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                let descriptionSize = Int(base.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
                let type = base.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
                let nameStart = offset + 12
                guard nameSize <= 64, descriptionSize <= 1024 else { return nil }
                let descriptionStart = nameStart + align4(nameSize)
                let next = descriptionStart + align4(descriptionSize)
                guard next <= notes.count else { return nil }
                if type == UInt32(NT_GNU_BUILD_ID) && nameSize == 4
                    && base.loadUnaligned(fromByteOffset: nameStart, as: UInt32.self) == 0x0055_4e47  // "GNU\0"
                {
                    return notes[descriptionStart..<(descriptionStart + descriptionSize)]
                        .map { String($0, radix: 16).leftPadded(2) }.joined()
                }
                offset = next
            }
            return nil
        }
    }

    /// DT_PLTGOT from the dynamic section (relocated by the loader on x86_64 and aarch64).
    private static func readPLTGOT<Memory: ImageMemory>(dynamic address: UInt, size: UInt, memory: Memory.Type) -> UInt? {
        let count = Int(min(size, 4096 * 16)) / MemoryLayout<Elf64_Dyn>.size
        guard count > 0, let entries = memory.bytes(at: address, count: count * MemoryLayout<Elf64_Dyn>.size) else { return nil }
        return entries.withUnsafeBytes { raw -> UInt? in
            for index in 0..<count {
                let entry = raw.loadUnaligned(fromByteOffset: index * MemoryLayout<Elf64_Dyn>.size, as: Elf64_Dyn.self)
                if entry.d_tag == Int64(DT_NULL) { return nil }
                if entry.d_tag == Int64(DT_PLTGOT) { return UInt(entry.d_un.d_ptr) }
            }
            return nil
        }
    }

    /// Where the binary-search table of an `.eh_frame_hdr` starts and its length in words. Only the
    /// standard encoding (data-relative signed 4-byte entries) is supported; other images are left
    /// without a table and the unwinder stops at their frames.
    private static func readSearchTable<Memory: ImageMemory>(header address: UInt, memory: Memory.Type) -> (data: UInt, words: UInt)? {
        guard let header = memory.bytes(at: address, count: 20) else { return nil }
        let version = header[0]
        let framePointerEncoding = header[1]
        let countEncoding = header[2]
        let tableEncoding = header[3]
        guard version == 1, tableEncoding == 0x3b, let frameSize = encodedSize(framePointerEncoding),
            let countSize = encodedSize(countEncoding), 4 + frameSize + countSize <= header.count
        else { return nil }
        let countOffset = 4 + frameSize
        let count: UInt = header.withUnsafeBytes { raw in
            switch countSize {
            case 4: return UInt(raw.loadUnaligned(fromByteOffset: countOffset, as: UInt32.self))
            case 8: return UInt(raw.loadUnaligned(fromByteOffset: countOffset, as: UInt64.self))
            default: return 0
            }
        }
        guard count > 0 else { return nil }
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

/// Where an image's bytes are read from: loaded memory the loader vouches for, or safe copies.
protocol ImageMemory {
    static func bytes(at address: UInt, count: Int) -> [UInt8]?
}

/// Memory of an image the dynamic loader lists (it stays mapped while `dl_iterate_phdr` runs).
enum UnsafeLoadedMemory: ImageMemory {
    static func bytes(at address: UInt, count: Int) -> [UInt8]? {
        guard count > 0, let base = UnsafeRawPointer(bitPattern: address) else { return nil }
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
