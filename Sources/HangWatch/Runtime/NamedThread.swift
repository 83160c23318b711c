import Foundation

/// Starts the monitor's own threads under a kernel name (what `top -H` and
/// `/proc/<pid>/task/*/comm` show, 15 bytes at most), set by the thread itself first thing: a
/// `Thread.name` set before the start does not reach the kernel on Linux, and a thread otherwise
/// keeps its creator's name (one started from a pool job would pass for a pool worker).
enum NamedThread {
    static func start(_ name: String, stackSize: Int, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            ProcTask(tid: UnsafeCaptureBridge.currentThreadID()).setName(name)
            body()
        }
        thread.name = name
        thread.stackSize = stackSize
        thread.start()
    }
}
