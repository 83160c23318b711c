import CHangWatchCapture

#if canImport(Glibc)
import Glibc
#endif

/// The unwinder's table of the loaded images (their executable segments with their unwind tables,
/// and the readable ranges), and where the Swift concurrency runtime's code is: what the C side
/// reads during a capture, published from an `ImageMap` before any.
enum UnsafeImageTable {
    enum PublishResult: Equatable {
        case published
        /// An unwind was in flight; try again later.
        case busy
        /// Published, but only the first segments fitted the table.
        case tooLarge
    }

    /// Hands the unwinder its table of executable segments and readable ranges.
    static func publish(_ map: ImageMap) -> PublishResult {
        publishConcurrencyRuntime(map)
        let segments = map.images.flatMap(\.unwindSegments).sorted { $0.range.lowerBound < $1.range.lowerBound }
            .map {
                hw_unwind_segment(
                    start: $0.range.lowerBound, end: $0.range.upperBound, gp: $0.globalPointer,
                    eh_frame_hdr: $0.ehFrameHeader, table_data: $0.tableData, table_words: $0.tableWords)
            }
        let ranges = map.images.flatMap(\.segments).sorted { $0.lowerBound < $1.lowerBound }
            .map { hw_address_range(start: $0.lowerBound, end: $0.upperBound) }
        let fits = segments.count <= Int(HW_MAX_SEGMENTS) && ranges.count <= Int(HW_MAX_RANGES)
        let result = Array(segments.prefix(Int(HW_MAX_SEGMENTS))).withUnsafeBufferPointer { segmentBuffer in
            Array(ranges.prefix(Int(HW_MAX_RANGES))).withUnsafeBufferPointer { rangeBuffer in
                hw_images_publish(segmentBuffer.baseAddress, segmentBuffer.count, rangeBuffer.baseAddress, rangeBuffer.count)
            }
        }
        switch result {
        case 0: return fits ? .published : .tooLarge
        default: return .busy
        }
    }


    /// Tells the capture code where the Swift concurrency runtime's code is (the executable segment
    /// holding `swift_job_run`, whose job loop calls async functions); without it no async callers
    /// are read.
    static func publishConcurrencyRuntime(_ map: ImageMap) {
        guard let address = jobRunAddress else {
            hw_async_runtime_set(0, 0)
            return
        }
        let segment = map.images.flatMap(\.unwindSegments).first { $0.range.contains(address) }
        hw_async_runtime_set(segment?.range.lowerBound ?? 0, segment?.range.upperBound ?? 0)
    }

    /// `swift_job_run`, looked up once when the capture handler is installed: `dlsym` takes the
    /// loader's lock, which a thread hung inside `dlopen` holds, so it is never called during a hang.
    static let jobRunAddress: UInt? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_job_run").map {
        UInt(bitPattern: $0)
    }
}
