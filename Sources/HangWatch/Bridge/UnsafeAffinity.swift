import CHangWatchCapture

/// The calling thread's CPU affinity (which CPUs it may run on).
enum UnsafeAffinity {
    static let bytes = 128  // 1024 CPUs, glibc's cpu_set_t

    static func current() -> [Int32]? {
        var mask = [UInt8](repeating: 0, count: bytes)
        guard hw_get_affinity(&mask, bytes) == 0 else { return nil }
        return (0..<Int32(bytes * 8)).filter { mask[Int($0 / 8)] & (1 << UInt8($0 % 8)) != 0 }
    }

    static func set(_ cpus: [Int32]) -> Bool {
        var mask = [UInt8](repeating: 0, count: bytes)
        for cpu in cpus where cpu >= 0 && Int(cpu / 8) < bytes { mask[Int(cpu / 8)] |= 1 << UInt8(cpu % 8) }
        return hw_set_affinity(mask, bytes) == 0
    }
}
