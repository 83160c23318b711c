#if canImport(Glibc)
import Glibc
#endif

@_silgen_name("swift_demangle")
private func _swift_demangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ outputBufferSize: UnsafeMutablePointer<Int>?, _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?

@_silgen_name("__cxa_demangle")
private func _cxa_demangle(
    _ mangledName: UnsafePointer<CChar>?, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ length: UnsafeMutablePointer<Int>?, _ status: UnsafeMutablePointer<Int32>?
) -> UnsafeMutablePointer<CChar>?

/// Turns mangled Swift and C++ symbol names into readable ones with the runtimes' own demanglers
/// (`swift_demangle` from the Swift runtime, `__cxa_demangle` from the C++ runtime).
public enum Demangler {
    /// The readable form of `name`, or `name` itself when it is not mangled.
    public static func demangle(_ name: String) -> String {
        if isSwiftMangled(name) {
            return name.withCString { pointer in
                guard let result = _swift_demangle(pointer, strlen(pointer), nil, nil, 0) else { return name }
                defer { free(result) }
                return String(cString: result)
            }
        }
        if name.hasPrefix("_Z") {
            return name.withCString { pointer in
                var status: Int32 = 0
                guard let result = _cxa_demangle(pointer, nil, nil, &status), status == 0 else { return name }
                defer { free(result) }
                return String(cString: result)
            }
        }
        return name
    }

    static func isSwiftMangled(_ name: String) -> Bool {
        ["$s", "_$s", "$S", "_$S", "$e", "_$e", "_T0"].contains { name.hasPrefix($0) }
    }
}
