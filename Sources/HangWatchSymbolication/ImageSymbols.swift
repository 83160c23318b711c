import CLibdw
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// The symbols and line tables of one ELF image, through elfutils' libdwfl.
///
/// The image is placed at address 0, so it is queried with file-relative addresses (a report
/// frame's `offset`). Which file is opened is `open(path:expectedBuildID:debugDirectories:)`'s
/// business: the binary at the report's path, or a copy or debug file found by build-id. Separate
/// debug files for an opened binary are also found by build-id. A file whose build-id differs from
/// the expected one is never used. Not thread-safe; `Symbolicator` serializes.
package final class ImageSymbols {
    private let session: OpaquePointer
    private let module: OpaquePointer
    private let searchPath: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private let callbacks: UnsafeMutablePointer<Dwfl_Callbacks>

    /// The image's build-id, lowercase hex.
    let buildID: String?

    /// Compile units by address range, built on first use: elfutils 0.188 finds a unit through
    /// `.debug_aranges`, which clang does not emit, so lookups fall back to this table.
    private var unitRanges: [(range: Range<UInt64>, unit: Dwarf_Die)]?
    private var dwarfBias: Dwarf_Addr = 0
    /// Answers already worked out (hang reports repeat the same addresses); bounded.
    private var answers: [UInt64: SymbolicatedFrame?] = [:]
    private static let answerLimit = 100_000

    /// Opens the file that holds image `path`'s symbols: the file at `path` itself, else (or when
    /// its build-id differs: the binary was replaced since the hang) a file found by build-id in
    /// each debug directory (`DIR/.build-id/xx/yyyy.debug`, `DIR/.build-id/xx/yyyy`) or by name
    /// (`DIR/<file name>`), then in `/usr/lib/debug/.build-id/`.
    package static func open(path: String, expectedBuildID: String?, debugDirectories: [String]) throws -> ImageSymbols {
        var candidates = [path]
        let buildID = expectedBuildID?.lowercased() ?? ""
        let directories = debugDirectories + ["/usr/lib/debug"]
        if buildID.count > 2, buildID.allSatisfy(\.isHexDigit) {
            let split = buildID.index(buildID.startIndex, offsetBy: 2)
            let relative = "/.build-id/" + buildID[..<split] + "/" + buildID[split...]
            for directory in directories {
                candidates += [directory + relative + ".debug", directory + relative]
            }
        }
        let name = PathText.lastComponent(of: path)
        if !name.isEmpty { candidates += debugDirectories.map { $0 + "/" + name } }
        var firstFailure: ImageSymbolsError?
        for candidate in candidates where FileManager.default.fileExists(atPath: candidate) {
            do {
                return try ImageSymbols(path: candidate, expectedBuildID: expectedBuildID, debugDirectories: debugDirectories)
            } catch let error as ImageSymbolsError {
                if firstFailure == nil { firstFailure = error }
            }
        }
        throw firstFailure ?? ImageSymbolsError.fileNotFound(path)
    }

    /// Opens the file at `path`, refusing it unless its build-id is `expectedBuildID` (when given).
    init(path: String, expectedBuildID: String?, debugDirectories: [String]) throws {
        // Only a regular file is opened: the path comes from a report, and a FIFO there would
        // block the open for good, a device would be read from.
        var info = stat()
        guard stat(path, &info) == 0 else { throw ImageSymbolsError.fileNotFound(path) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw ImageSymbolsError.unreadable(path: path, reason: "not a regular file")
        }
        let directories = debugDirectories + ["/usr/lib/debug"]
        // A leading "-" disables CRC checks of .gnu_debuglink files (build-ids are checked instead).
        searchPath = .allocate(capacity: 1)
        searchPath.initialize(to: strdup("-:.debug:" + directories.joined(separator: ":")))
        callbacks = .allocate(capacity: 1)
        callbacks.initialize(
            to: Dwfl_Callbacks(
                find_elf: dwfl_build_id_find_elf, find_debuginfo: dwfl_standard_find_debuginfo,
                section_address: dwfl_offline_section_address, debuginfo_path: searchPath))
        guard let session = dwfl_begin(callbacks) else {
            Self.release(searchPath, callbacks)
            throw ImageSymbolsError.unreadable(path: path, reason: String(cString: dwfl_errmsg(-1)))
        }
        dwfl_report_begin(session)
        guard let module = dwfl_report_elf(session, path, path, -1, 0, false) else {
            let reason = String(cString: dwfl_errmsg(-1))
            dwfl_end(session)
            Self.release(searchPath, callbacks)
            throw ImageSymbolsError.unreadable(path: path, reason: reason)
        }
        dwfl_report_end(session, nil, nil)
        self.session = session
        self.module = module

        var bits: UnsafePointer<UInt8>?
        var vaddr: GElf_Addr = 0
        let length = dwfl_module_build_id(module, &bits, &vaddr)
        if length > 0, let bits {
            buildID = (0..<Int(length)).map { String(printf: "%02x", bits[$0]) }.joined()
        } else {
            buildID = nil
        }
        if let expectedBuildID, !expectedBuildID.isEmpty, expectedBuildID.lowercased() != buildID {
            // Fully initialized: deinit ends the session.
            throw ImageSymbolsError.buildIDMismatch(path: path, expected: expectedBuildID, found: buildID)
        }
    }

    deinit {
        dwfl_end(session)
        Self.release(searchPath, callbacks)
    }

    private static func release(
        _ searchPath: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, _ callbacks: UnsafeMutablePointer<Dwfl_Callbacks>
    ) {
        free(searchPath.pointee)
        searchPath.deinitialize(count: 1)
        searchPath.deallocate()
        callbacks.deinitialize(count: 1)
        callbacks.deallocate()
    }

    /// The function (and line, if known) at file-relative address `offset`.
    package func lookup(offset: UInt64) -> SymbolicatedFrame? {
        if let known = answers[offset] { return known }
        let answer = resolve(offset: offset)
        if answers.count >= Self.answerLimit { answers.removeAll(keepingCapacity: true) }
        answers[offset] = answer
        return answer
    }

    private func resolve(offset: UInt64) -> SymbolicatedFrame? {
        var symbolOffset: GElf_Off = 0
        var symbol = GElf_Sym()
        guard let name = dwfl_module_addrinfo(module, GElf_Addr(offset), &symbolOffset, &symbol, nil, nil, nil) else {
            return linkerStub(offset: offset)
        }
        var result = SymbolicatedFrame(
            symbol: Demangler.demangle(String(cString: name)), offset: UInt64(symbolOffset), file: nil, line: nil)
        if let line = dwfl_module_getsrc(module, Dwarf_Addr(offset)) {
            var lineNumber: Int32 = 0
            if let file = dwfl_lineinfo(line, nil, &lineNumber, nil, nil, nil) {
                result.file = String(cString: file)
                result.line = lineNumber > 0 ? Int(lineNumber) : nil
            }
        } else if let (file, line) = lineFromUnits(offset: offset) {
            result.file = file
            result.line = line
        }
        return result
    }

    /// A procedure linkage table entry (no symbol covers it): `<function>@plt`, the function the
    /// stub jumps to, when its instruction proves which one (x86_64 `jmp *slot(%rip)`, the slot
    /// named by a `.rela.plt` relocation); else `PLT stub` (`SymbolName.isLinkerStub`). Time in one is time calling that
    /// function from the frame below.
    private func linkerStub(offset: UInt64) -> SymbolicatedFrame? {
        var bias: GElf_Addr = 0
        guard let elf = dwfl_module_getelf(module, &bias) else { return nil }
        let address = GElf_Addr(offset) &- bias
        var names = 0
        guard elf_getshdrstrndx(elf, &names) == 0 else { return nil }
        var stub: (start: GElf_Addr, bytes: UnsafeRawBufferPointer)?
        var relocations: (data: UnsafeMutablePointer<Elf_Data>, symbols: Int)?
        var section: OpaquePointer? = nil
        while let next = elf_nextscn(elf, section) {
            section = next
            var header = GElf_Shdr()
            guard gelf_getshdr(next, &header) != nil, let rawName = elf_strptr(elf, names, Int(header.sh_name)) else { continue }
            let name = String(cString: rawName)
            if [".plt", ".plt.sec", ".plt.got", ".iplt"].contains(name), address >= header.sh_addr,
                address < header.sh_addr + header.sh_size, header.sh_type == UInt32(SHT_PROGBITS),
                let data = elf_getdata(next, nil), let buffer = data.pointee.d_buf
            {
                stub = (header.sh_addr, UnsafeRawBufferPointer(start: buffer, count: Int(data.pointee.d_size)))
            }
            if name == ".rela.plt", let data = elf_getdata(next, nil) { relocations = (data, Int(header.sh_link)) }
        }
        guard let stub else { return nil }
        let plain = SymbolicatedFrame(symbol: SymbolName.unknownLinkerStub, offset: 0, file: nil, line: nil)
        #if arch(x86_64)
            // Entries are 16 bytes; find this one's `jmp *disp32(%rip)` (ff 25), after an
            // `endbr64` (f3 0f 1e fa) and a `bnd` prefix (f2) where the linker put them.
            let entry = Int(address - stub.start) & ~15
            guard entry + 16 <= stub.bytes.count, let relocations,
                let symbolTable = elf_getscn(elf, relocations.symbols), let symbolData = elf_getdata(symbolTable, nil)
            else { return plain }
            var symbolHeader = GElf_Shdr()
            guard gelf_getshdr(symbolTable, &symbolHeader) != nil else { return plain }
            for start in [entry, entry + 4] {
                var at = start
                if stub.bytes[at] == 0xf2 { at += 1 }
                guard at + 6 <= entry + 16, stub.bytes[at] == 0xff, stub.bytes[at + 1] == 0x25 else { continue }
                let displacement = stub.bytes.loadUnaligned(fromByteOffset: at + 2, as: Int32.self)
                let slot = GElf_Addr(Int64(stub.start) + Int64(at + 6) + Int64(displacement))
                var index: Int32 = 0
                var relocation = GElf_Rela()
                while gelf_getrela(relocations.data, index, &relocation) != nil {
                    index += 1
                    guard relocation.r_offset == slot else { continue }
                    var symbol = GElf_Sym()
                    guard gelf_getsym(symbolData, Int32(relocation.r_info >> 32), &symbol) != nil,
                        let name = elf_strptr(elf, Int(symbolHeader.sh_link), Int(symbol.st_name)), name.pointee != 0
                    else { return plain }
                    return SymbolicatedFrame(
                        symbol: Demangler.demangle(String(cString: name)) + SymbolName.linkerStubMark, offset: address - (stub.start + GElf_Addr(entry)),
                        file: nil, line: nil)
                }
                return plain
            }
        #endif
        return plain
    }

    private func lineFromUnits(offset: UInt64) -> (String, Int?)? {
        if unitRanges == nil { unitRanges = buildUnitRanges() }
        let address = offset &- dwarfBias
        guard var unit = unitRanges?.first(where: { $0.range.contains(address) })?.unit,
            let line = dwarf_getsrc_die(&unit, address), let file = dwarf_linesrc(line, nil, nil)
        else { return nil }
        var number: Int32 = 0
        _ = dwarf_lineno(line, &number)
        return (String(cString: file), number > 0 ? Int(number) : nil)
    }

    private func buildUnitRanges() -> [(range: Range<UInt64>, unit: Dwarf_Die)] {
        var ranges: [(range: Range<UInt64>, unit: Dwarf_Die)] = []
        var bias: Dwarf_Addr = 0
        var previous: UnsafeMutablePointer<Dwarf_Die>?
        while let unit = dwfl_module_nextcu(module, previous, &bias) {
            dwarfBias = bias
            var offset: Int = 0
            var base: Dwarf_Addr = 0
            var start: Dwarf_Addr = 0
            var end: Dwarf_Addr = 0
            repeat {
                offset = dwarf_ranges(unit, offset, &base, &start, &end)
                if offset > 0 && end > start { ranges.append((range: start..<end, unit: unit.pointee)) }
            } while offset > 0
            previous = unit
        }
        return ranges
    }
}
