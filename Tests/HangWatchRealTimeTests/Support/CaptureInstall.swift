@testable import HangWatch
import Testing

/// Installs the capture handler for `signal` and publishes the images loaded now (so their frames
/// can be unwound), as a monitor does when it starts: the set-up of the suites that capture directly.
func installCapture(signal: Int32) throws {
    try UnsafeCaptureBridge.install(signal: signal)
    #expect(UnsafeImageTable.publish(UnsafeImageMapReader.read()) == .published)
}
