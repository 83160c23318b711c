#if !Vapor
#if canImport(Glibc)
import Glibc
#endif

/// Built without the package's `Vapor` trait (the default: `make test`'s debug build skips
/// Vapor): says how to build the real service.
@main
struct VaporServiceWithoutVapor {
    static func main() {
        let message = "hangwatch-vapor-service: built without Vapor; build it with: swift build -c release --enable-all-traits --product hangwatch-vapor-service\n"
        _ = message.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        exit(2)
    }
}
#endif
