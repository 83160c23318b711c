import CEpoll
import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// Sleeps until an event loop wakes, without waking it: the loop's own epoll instance (its file
/// descriptor, learnt from `/proc` while the loop waits on it) is added to an epoll instance of our
/// own, edge-triggered. Epoll instances nest: ours becomes readable the moment the loop's has an
/// event ready, which is the moment the loop's `epoll_wait` returns; reading ours takes nothing
/// from the loop. An idle loop costs nothing; each wake of the loop wakes the watcher once, except
/// when the loop consumes the event before our wait checks for it (the check comes after the
/// wake): then our wait goes on, and only a look finds the loop awake (`EventLoopActivitySource`).
///
/// The loop's instance is in ours only while the watcher waits for the loop to wake
/// (`waitForLoop`): while it is nested, every event the loop gets also runs our instance's wake-up
/// in the kernel, on the thread that delivers the event (about 0.1 µs per event here). A busy loop
/// is left out (`sleep` takes it out); putting it back costs about 1.6 µs, once per return to idle.
///
/// Unsafe: it holds a duplicate of another component's descriptor (so the instance stays valid
/// even if the loop closes its own), and checks it is an epoll instance before using it. One
/// thread waits on it; `stop()` and `nudge()` (writes to eventfds) are safe from any thread.
final class UnsafeLoopEpollWatch: @unchecked Sendable {
    /// Ours: the loop's instance (edge-triggered) and the stop event.
    private let watching: Int32
    /// Only the stop event: for sleeping while the loop is busy (its events would wake us each time).
    private let sleeping: Int32
    private let loop: Int32
    /// The loop's instance is in `watching` (only the waiting thread changes it).
    private var loopNested = true
    private let stopEvent: Int32
    private let nudgeEvent: Int32

    enum Wake: Equatable {
        /// The loop's instance had an event ready: the loop woke.
        case loop
        /// The timeout passed.
        case timeout
        /// `nudge()` was called.
        case nudged
        /// `stop()` was called.
        case stopped
    }

    /// Nil when `descriptor` is not an epoll instance (any longer) or one of ours cannot be made.
    init?(loopEpoll descriptor: Int32) {
        let duplicate = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard duplicate >= 0 else { return nil }
        guard Self.isEpollInstance(duplicate) else {
            close(duplicate)
            return nil
        }
        loop = duplicate
        watching = epoll_create1(Int32(EPOLL_CLOEXEC))
        sleeping = epoll_create1(Int32(EPOLL_CLOEXEC))
        stopEvent = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        nudgeEvent = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        var nudgeInterest = epoll_event()
        nudgeInterest.events = EPOLLIN.rawValue
        nudgeInterest.data.u64 = 2
        var stopInterest = epoll_event()
        stopInterest.events = EPOLLIN.rawValue
        stopInterest.data.u64 = 0
        var loopInterest = epoll_event()
        loopInterest.events = EPOLLIN.rawValue | EPOLLET.rawValue
        loopInterest.data.u64 = 1
        guard watching >= 0, sleeping >= 0, stopEvent >= 0, nudgeEvent >= 0,
            epoll_ctl(watching, EPOLL_CTL_ADD, stopEvent, &stopInterest) == 0,
            epoll_ctl(sleeping, EPOLL_CTL_ADD, stopEvent, &stopInterest) == 0,
            epoll_ctl(watching, EPOLL_CTL_ADD, nudgeEvent, &nudgeInterest) == 0,
            epoll_ctl(sleeping, EPOLL_CTL_ADD, nudgeEvent, &nudgeInterest) == 0,
            epoll_ctl(watching, EPOLL_CTL_ADD, loop, &loopInterest) == 0
        else {
            // (Every descriptor is set by now, so `deinit` runs and closes them: closing them here
            // as well closed them twice, and the second close could take a descriptor the process
            // had opened again meanwhile, another watcher's included.)
            return nil
        }
    }

    deinit {
        for fd in [watching, sleeping, stopEvent, nudgeEvent, loop] where fd >= 0 { close(fd) }
    }

    /// `anon_inode:[eventpoll]` behind `descriptor`.
    static func isEpollInstance(_ descriptor: Int32) -> Bool {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return false }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) == "anon_inode:[eventpoll]"
    }

    /// Waits for the loop to wake, for at most `milliseconds` (-1: no limit). Call `nestLoop()` first.
    func waitForLoop(milliseconds: Int32) -> Wake {
        wait(on: watching, milliseconds: milliseconds)
    }

    /// Sleeps `milliseconds` whatever the loop does (stop still ends it). The loop's instance is
    /// taken out of ours first (the loop is busy: its events are not news).
    func sleep(milliseconds: Int32) -> Wake {
        if loopNested, epoll_ctl(watching, EPOLL_CTL_DEL, loop, nil) == 0 { loopNested = false }
        return wait(on: sleeping, milliseconds: milliseconds)
    }

    /// Puts the loop's instance back in ours, before waiting for the loop to wake: a wake from now
    /// on is news, and one pending now (events the loop has not taken yet) makes ours readable at
    /// once. False when it cannot be put back (then only looks can see the loop wake).
    func nestLoop() -> Bool {
        guard !loopNested else { return true }
        var loopInterest = epoll_event()
        loopInterest.events = EPOLLIN.rawValue | EPOLLET.rawValue
        loopInterest.data.u64 = 1
        loopNested = epoll_ctl(watching, EPOLL_CTL_ADD, loop, &loopInterest) == 0
        return loopNested
    }

    func stop() {
        var one: UInt64 = 1
        _ = write(stopEvent, &one, 8)
    }

    /// Wakes the watcher from any wait (the loop answered a ping): one `write` to an eventfd.
    func nudge() {
        var one: UInt64 = 1
        _ = write(nudgeEvent, &one, 8)
    }

    private func wait(on instance: Int32, milliseconds: Int32) -> Wake {
        // (On the stack: the watcher waits once per look, and a look under load is every 10 ms.)
        withUnsafeTemporaryAllocation(of: epoll_event.self, capacity: 2) { events in
            do {
                // (Cut short by a signal, it waits again, for the whole time: a look comes a little late.)
                let count = try SystemCall.check("epoll_wait") { epoll_wait(instance, events.baseAddress, 2, milliseconds) }
                guard count > 0 else { return .timeout }
                let woken = events[0..<Int(count)]
                if woken.contains(where: { $0.data.u64 == 0 }) { return .stopped }
                if woken.contains(where: { $0.data.u64 == 2 }) {
                    var count: UInt64 = 0
                    _ = read(nudgeEvent, &count, 8)
                    return .nudged
                }
                return .loop
            } catch {
                // Not expected (our own instances); as a timeout, the watcher looks at the loop.
                return .timeout
            }
        }
    }
}
