import Foundation

/// A test thread's name as the kernel has it (`/proc/<pid>/task/<tid>/comm`, what a report reads).
///
/// Foundation's `Thread.name` on Linux does not do this reliably: set before `start()` it never
/// reaches the pthread, and set from inside the thread's block it does only if `start()` has
/// already stored the new thread's handle (a race a test lost in CI, its report then reading the
/// name the thread inherited from the test's pool worker).
package enum ThreadName {
    /// Names the calling thread (15 bytes at most, as the kernel keeps); false if it could not.
    @discardableResult
    package static func setCurrent(_ name: String) -> Bool {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        return bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
    }
}
