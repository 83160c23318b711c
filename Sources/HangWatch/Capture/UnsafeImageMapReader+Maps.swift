@_spi(Internal) import HangWatchReport
import CLinkMap
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Images the loader's list does not show yet: a library that `dlopen` is still loading (its
/// constructors run with the loader's lock held, so `dl_iterate_phdr` would wait for the hung
/// thread). They are found in `/proc/self/maps` and read from memory with `process_vm_readv`, which
/// fails instead of faulting if the memory goes away.
extension UnsafeImageMapReader {
    /// File-backed images with executable code that `known` does not cover.
    static func readMappedImages(notIn known: ImageMap) -> [ImageMap.Image] {
        guard let maps = SmallFile.text("/proc/self/maps", limit: 16 << 20) else { return [] }
        var byPath: [String: [Mapping]] = [:]
        for line in maps.split(separator: "\n") {
            if let mapping = Mapping(line: line) { byPath[mapping.path, default: []].append(mapping) }
        }
        var images: [ImageMap.Image] = []
        for (path, mappings) in byPath {
            guard mappings.contains(where: { $0.executable && known.imageIndex(containing: $0.start) == nil }),
                let header = mappings.first(where: { $0.offset == 0 }),
                let image = image(path: path, headerAddress: header.start, executablePath: ProcessSnapshot.executablePath())
            else { continue }
            images.append(image)
        }
        return images
    }

    /// One line of `/proc/self/maps`: `start-end perms offset dev inode path`.
    struct Mapping {
        var start: UInt
        var end: UInt
        var executable: Bool
        var offset: UInt
        var path: String

        init?(line: Substring) {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6 else { return nil }
            let path = fields[5].trimmingCharacters(in: .whitespaces)
            guard path.hasPrefix("/"), !path.hasSuffix(" (deleted)") else { return nil }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
                let offset = UInt(fields[2], radix: 16)
            else { return nil }
            self.start = start
            self.end = end
            executable = fields[1].contains("x")
            self.offset = offset
            self.path = path
        }
    }

    /// The image whose ELF header is mapped at `headerAddress`.
    private static func image(path: String, headerAddress: UInt, executablePath: String) -> ImageMap.Image? {
        guard let header = UnsafeProcessMemory.copy(Elf64_Ehdr.self, at: headerAddress),
            header.e_ident.0 == 0x7F, header.e_ident.1 == 0x45, header.e_ident.2 == 0x4C, header.e_ident.3 == 0x46,
            header.e_phentsize == UInt16(MemoryLayout<Elf64_Phdr>.size), header.e_phnum > 0, header.e_phnum < 256,
            let headers = UnsafeProcessMemory.copyArray(
                Elf64_Phdr.self, at: headerAddress + UInt(header.e_phoff), count: Int(header.e_phnum))
        else { return nil }
        // The load bias: the file's first loadable segment maps its first page.
        guard let first = headers.first(where: { $0.p_type == UInt32(PT_LOAD) }) else { return nil }
        let bias = headerAddress &- (UInt(first.p_vaddr) & ~UInt(4095))
        return headers.withUnsafeBufferPointer { buffer in
            image(
                headers: buffer, bias: bias, name: path, isMain: path == executablePath,
                memory: UnsafeProcessMemory.self)
        }
    }
}

/// Copies of this process's memory through `process_vm_readv`: unmapped memory is an error, not a fault.
enum UnsafeProcessMemory: ImageMemory {
    /// The most one copy takes (sizes come from image headers, which may be wrong).
    static let maxCount = 1 << 20

    static func bytes(at address: UInt, count: Int) -> [UInt8]? {
        guard count > 0, count <= maxCount else { return nil }
        var buffer = [UInt8](repeating: 0, count: count)
        return buffer.withUnsafeMutableBytes { copy(from: address, into: $0) } ? buffer : nil
    }

    /// Fills `buffer` with the bytes at `address`: true only when every byte was copied.
    static func copy(from address: UInt, into buffer: UnsafeMutableRawBufferPointer) -> Bool {
        guard buffer.count > 0, buffer.count <= maxCount, address != 0 else { return false }
        var local = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var remote = iovec(iov_base: UnsafeMutableRawPointer(bitPattern: address), iov_len: buffer.count)
        return hw_process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == buffer.count
    }

    /// One value at `address`, copied without allocating.
    static func copy<T>(_ type: T.Type, at address: UInt) -> T? {
        withUnsafeTemporaryAllocation(byteCount: MemoryLayout<T>.size, alignment: MemoryLayout<T>.alignment) { buffer in
            copy(from: address, into: buffer) ? UnsafeRawBufferPointer(buffer).loadUnaligned(as: T.self) : nil
        }
    }

    static func copyArray<T>(_ type: T.Type, at address: UInt, count: Int) -> [T]? {
        bytes(at: address, count: MemoryLayout<T>.stride * count).map { bytes in
            bytes.withUnsafeBytes { raw in (0..<count).map { raw.loadUnaligned(fromByteOffset: $0 * MemoryLayout<T>.stride, as: T.self) } }
        }
    }
}
