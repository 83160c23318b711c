@_spi(Internal) import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// Finds the words of this process's writable anonymous memory (`TaskHeapMapping`) that equal one
/// of a few needles (the task metadata; the callback word of libdispatch's timers), 16-byte
/// aligned: where the runtime puts a task (malloc's alignment, and its task allocator's). Memory
/// is copied through the kernel a chunk at a time (`UnsafeProcessMemory`): a mapping unmapped
/// while it is scanned costs a failed chunk, never a fault. Nothing is stopped: other threads run
/// on while it reads, so every hit is a candidate that `UnsafeTaskReader` checks.
///
/// Its own chunk buffer is never scanned (it holds copies of what it just read), and is zeroed
/// before it goes back to malloc: a copy of a task left in freed memory would be found by the next
/// scan. Unsafe: it reads raw memory of the whole process.
struct UnsafeTaskHeapScan {
    /// Bytes copied per system call.
    static let chunkBytes = 1 << 20

    struct Result: Sendable, Equatable {
        /// The hits, by needle (in the needles' order), in address order.
        var hits: [[UInt]]
        var mappings = 0
        var bytes = 0
        var failedChunks = 0
        /// Why the scan stopped before the end (the time or candidate bound), nil when it did not.
        var stoppedEarly: String?
    }

    var needles: [UInt]
    /// Every word, not only the 16-byte-aligned ones (a field inside a structure of unknown
    /// alignment).
    var everyWord = false
    /// When set, a needle's word is a hit only when the word after it is one of these (a callback
    /// followed by its argument: libdispatch's continuation of one of the wake tasks).
    var followedBy: Set<UInt>? = nil
    /// The most hits kept (all needles together).
    var maxHits: Int
    /// `CLOCK_MONOTONIC` nanoseconds after which the scan stops where it is.
    var deadlineNanoseconds: UInt64

    /// Scans `mappings`; `chunk` is called after each chunk with the chunk's address, its copy and
    /// the first needle's hits in it (the copy is valid during the call only).
    func scan(_ mappings: [TaskHeapMapping], chunk: ((UInt, UnsafeRawBufferPointer, ArraySlice<UInt>) -> Void)? = nil) -> Result {
        precondition(needles.count <= 2, "at most two needles")
        var result = Result(hits: Array(repeating: [], count: needles.count))
        guard !needles.isEmpty else { return result }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkBytes, alignment: 16)
        defer {
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            buffer.deallocate()
        }
        let own = UInt(bitPattern: buffer.baseAddress)..<(UInt(bitPattern: buffer.baseAddress) + UInt(Self.chunkBytes))
        var total = 0
        mappings: for mapping in mappings {
            result.mappings += 1
            var address = mapping.start
            while address < mapping.end {
                let count = Int(min(UInt(Self.chunkBytes), mapping.end - address))
                defer { address += UInt(count) }
                if address < own.upperBound && own.lowerBound < address + UInt(count) { continue }
                guard UnsafeProcessMemory.copy(from: address, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])) else {
                    result.failedChunks += 1
                    continue
                }
                result.bytes += count
                let before = result.hits[0].count
                total += Self.match(buffer, count: count, base: address, needles: needles, step: everyWord ? 1 : 2, followedBy: followedBy, into: &result.hits)
                chunk?(address, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), result.hits[0][before...])
                if total >= maxHits {
                    result.stoppedEarly = "at \(maxHits) candidates"
                    break mappings
                }
                if UnsafeClock.monotonicNanoseconds() >= deadlineNanoseconds {
                    result.stoppedEarly = "at its time bound"
                    break mappings
                }
            }
        }
        return result
    }

    /// Appends the words of `buffer`'s first `count` bytes, every `step`th, equal to a needle.
    private static func match(
        _ buffer: UnsafeMutableRawBufferPointer, count: Int, base: UInt, needles: [UInt], step: Int, followedBy: Set<UInt>?,
        into hits: inout [[UInt]]
    ) -> Int {
        let words = UnsafeBufferPointer(start: buffer.baseAddress!.assumingMemoryBound(to: UInt.self), count: count / 8)
        var found = 0
        let first = needles[0]
        let second = needles.count > 1 ? needles[1] : first
        var index = 0
        while index < words.count {
            let word = words[index]
            if word == first || word == second, followedBy.map({ index + 1 < words.count && $0.contains(words[index + 1]) }) ?? true {
                for (which, needle) in needles.enumerated() where needle == word {
                    hits[which].append(base + UInt(index * 8))
                    found += 1
                }
            }
            index += step
        }
        return found
    }
}
