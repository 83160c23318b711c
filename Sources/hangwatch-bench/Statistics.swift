import Foundation

/// Medians, percentiles and the process's CPU time.
enum Statistics {
    static func median(_ values: [Double]) -> Double {
        percentile(values, 0.5)
    }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let position = fraction * Double(sorted.count - 1)
        let low = Int(position.rounded(.down))
        let high = min(low + 1, sorted.count - 1)
        return sorted[low] + (sorted[high] - sorted[low]) * (position - Double(low))
    }

    /// User + system CPU time of the whole process, in seconds.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    static func monotonicSeconds() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}

/// Spins for about `nanoseconds`: the work of one iteration.
@inline(never)
func benchWork(nanoseconds: UInt64) {
    guard nanoseconds > 0 else { return }
    let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
    var state: UInt64 = 1
    while DispatchTime.now().uptimeNanoseconds < end {
        for _ in 0..<16 { state = state &* 6_364_136_223_846_793_005 &+ 1 }
    }
    blackHole(state)
}

@inline(never)
func blackHole(_ value: UInt64) {
    if value == 42 { print("") }
}
