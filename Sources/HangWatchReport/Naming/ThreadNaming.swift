/// What a thread's kernel name (15 bytes at most) says about who runs it, for people reading a
/// report: libdispatch names its workers after the last 15 characters of their root queue's label
/// (`com.apple.root.default-qos.overcommit` becomes `-qos.overcommit`), SwiftNIO its loops
/// `NIO-ELT-<group>-#<loop>`.
public enum ThreadNaming {
    /// A short description of the thread's role, or nil for names it does not know.
    public static func role(of name: String) -> String? {
        if name.hasSuffix("-qos.overcommit") || name == "-qos.overcommit" {
            return "libdispatch worker, overcommit pool (the main queue and serial queues run here)"
        }
        let pools = [
            "interactive-qos": "user-interactive", "r-initiated-qos": "user-initiated", "oot.default-qos": "default",
            "oot.utility-qos": "utility", ".background-qos": "background", "maintenance-qos": "maintenance",
        ]
        if let qos = pools[name] {
            return "Swift cooperative pool (libdispatch worker, \(qos) priority)"
        }
        if name.hasPrefix("NIO-ELT-") || name.hasPrefix("NIO-SGLTN-") {
            return "SwiftNIO event loop"
        }
        if name.hasPrefix("TP-#") || name.hasPrefix("SGLTN-TP-#") {
            return "SwiftNIO thread pool"
        }
        return nil
    }
}
