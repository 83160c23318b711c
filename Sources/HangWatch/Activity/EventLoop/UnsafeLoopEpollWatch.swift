import CEpoll
@_spi(Internal) import HangWatchReport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Sleeps until one of several event loops wakes, without waking them. Each loop's own epoll
/// instance (its file descriptor, learnt from `/proc` while the loop waits on it) is watched with
/// the loop's key, in one of two ways:
/// - **polled through an io_uring** (`UnsafeLoopWakeRing`, whose descriptor is in our epoll
///   instance), where one can be made: a poll completes at the loop's wake and its completion
///   waits in the ring until read, so no wake is lost;
/// - else **nested**: added to our epoll instance, edge-triggered. Epoll instances nest: ours
///   becomes readable the moment a loop's has an event ready, which is the moment the loop's
///   `epoll_wait` returns; reading ours takes nothing from the loop. Each wake of a loop wakes the
///   watcher once, except when the loop consumes the event before our wait checks for it (the
///   check comes after the wake): then our wait goes on, and only a look finds the loop awake
///   (`EventLoopActivitySource`).
///
/// Either way an idle loop costs nothing.
///
/// A loop's instance is polled or nested only while the watcher waits for that loop to wake
/// (`Registration.nest()`): while it is nested, every event the loop gets also runs our instance's
/// wake-up in the kernel, on the thread that delivers the event (about 0.1 µs per event here). A
/// busy loop is left out (`unnest()`); putting it back costs about 1.6 µs, once per return to idle.
///
/// Unsafe: a registration holds a duplicate of another component's descriptor (so the instance
/// stays valid even if the loop closes its own), and checks it is an epoll instance before using
/// it. Two threads: the watchdog's (its event-loop lanes register, nest and unnest, and submit to
/// the ring) and the watcher's (it waits on the watch and drains the ring); what both touch (the
/// polls pending, those refused) is under a lock. `interrupt()` (a write to an eventfd) is safe
/// from any thread.
final class UnsafeLoopEpollWatch: @unchecked Sendable {
    /// Ours: the nested loops' instances (edge-triggered), the interrupt event.
    private let watching: Int32
    private let interruptEvent: Int32
    private static let interruptKey: UInt64 = 0
    private static let ringKey: UInt64 = 2
    /// Keys of registrations start here (made on the watchdog's thread only).
    private static let firstLoopKey: UInt64 = 3
    private var nextKey = firstLoopKey
    /// Polls idle loops' instances where io_uring is available: their wakes are then never lost
    /// (`UnsafeLoopWakeRing`); nil: they are nested in ours.
    private let ring: UnsafeLoopWakeRing?
    private struct Polls {
        /// Keys of the loops whose poll is pending in the ring.
        var armed: Set<UInt64> = []
        /// Keys of the loops whose poll the ring refused: nested from then on.
        var unpolled: Set<UInt64> = []
    }
    private let polls = Mutex(Polls())

    /// What one wait saw.
    struct Wakes {
        /// Keys of the loops whose instance had an event ready: they woke.
        var loops: [UInt64] = []
        /// `interrupt()` was called.
        var interrupted = false
    }

    /// Why idle loops' wakes are not polled through an io_uring (`polling` false, or the ring
    /// could not be made); nil when they are.
    let ringUnavailable: String?

    /// Nil when one of our descriptors cannot be made. `polling`: poll idle loops through an
    /// io_uring where one can be made.
    init?(polling: Bool = true) {
        if polling {
            do {
                ring = try UnsafeLoopWakeRing()
                ringUnavailable = nil
            } catch {
                ring = nil
                ringUnavailable = "io_uring unavailable: \(error.description)"
            }
        } else {
            ring = nil
            ringUnavailable = "io_uring off by configuration (HANGWATCH_IO_URING=no)"
        }
        watching = epoll_create1(Int32(EPOLL_CLOEXEC))
        interruptEvent = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        var interruptInterest = epoll_event()
        interruptInterest.events = EPOLLIN.rawValue
        interruptInterest.data.u64 = Self.interruptKey
        guard watching >= 0, interruptEvent >= 0,
            epoll_ctl(watching, EPOLL_CTL_ADD, interruptEvent, &interruptInterest) == 0,
            ring.map({ ring in
                var ringInterest = epoll_event()
                ringInterest.events = EPOLLIN.rawValue
                ringInterest.data.u64 = Self.ringKey
                return epoll_ctl(watching, EPOLL_CTL_ADD, ring.descriptor, &ringInterest) == 0
            }) ?? true
        else {
            // (Every descriptor is set by now, so `deinit` runs and closes them: closing them here
            // as well closed them twice, and the second close could take a descriptor the process
            // had opened again meanwhile, another watcher's included.)
            return nil
        }
    }

    deinit {
        for fd in [watching, interruptEvent] where fd >= 0 { close(fd) }
    }

    /// Whether the loops' wakes come through the ring (never lost), rather than through nested
    /// instances (lost now and then: the watcher then also looks at idle loops).
    var pollsThroughRing: Bool { ring != nil }

    /// One loop's epoll instance, held for the watch (polled, nested or neither). Only the
    /// watchdog's thread uses it (the loop's lane); its duplicate is closed when it goes.
    final class Registration {
        let key: UInt64
        private let loop: Int32
        private let watch: UnsafeLoopEpollWatch
        /// The loop's instance is in ours.
        private var nested = false

        fileprivate init(key: UInt64, loop: Int32, watch: UnsafeLoopEpollWatch) {
            self.key = key
            self.loop = loop
            self.watch = watch
        }

        deinit {
            if nested { _ = epoll_ctl(watch.watching, EPOLL_CTL_DEL, loop, nil) }
            let wasArmed = watch.polls.withLock { polls in
                polls.unpolled.remove(key)
                return polls.armed.remove(key) != nil
            }
            if wasArmed { watch.ring?.cancel(key: key) }
            close(loop)
        }

        /// Whether a wake of the loop from now on is sure to reach the watcher (polled through the
        /// ring), rather than nested (a wake can be lost) or neither.
        var wakeIsCertain: Bool { watch.ring != nil && !watch.polls.withLock { $0.unpolled.contains(key) } }

        /// Watches the loop's instance for its wake, before waiting for the loop to wake: a wake
        /// from now on is news, and one pending now (events the loop has not taken yet) is seen
        /// at once. Polled through the ring (once; a poll still pending from before stays), else
        /// nested in ours. False when neither is possible (then only looks can see the loop wake).
        func nest() -> Bool {
            if let ring = watch.ring, let pending = watch.polls.withLock({ $0.unpolled.contains(key) ? nil : $0.armed.contains(key) }) {
                if pending { return true }
                // (Marked armed before the submission: its completion, drained on the watcher's
                // thread, may come before `arm` returns.)
                watch.polls.withLock { _ = $0.armed.insert(key) }
                if ring.arm(loop, key: key) { return true }
                watch.polls.withLock { polls in
                    polls.armed.remove(key)
                    polls.unpolled.insert(key)
                }
            }
            guard !nested else { return true }
            var loopInterest = epoll_event()
            loopInterest.events = EPOLLIN.rawValue | EPOLLET.rawValue
            loopInterest.data.u64 = key
            nested = epoll_ctl(watch.watching, EPOLL_CTL_ADD, loop, &loopInterest) == 0
            return nested
        }

        /// Takes the loop's instance out of ours (the loop is busy: its events are not news). A
        /// poll in the ring stays pending: it completes at the loop's next wake, and the watcher
        /// takes that for what it is.
        func unnest() {
            if nested, epoll_ctl(watch.watching, EPOLL_CTL_DEL, loop, nil) == 0 { nested = false }
        }
    }

    /// Holds the loop's epoll instance `descriptor` for this watch, not nested yet. Nil when it is
    /// not an epoll instance (any longer). Call on the watchdog's thread.
    func register(loopEpoll descriptor: Int32) -> Registration? {
        let duplicate = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard duplicate >= 0 else { return nil }
        guard Self.isEpollInstance(duplicate) else {
            close(duplicate)
            return nil
        }
        defer { nextKey += 1 }
        return Registration(key: nextKey, loop: duplicate, watch: self)
    }

    /// `anon_inode:[eventpoll]` behind `descriptor`.
    static func isEpollInstance(_ descriptor: Int32) -> Bool {
        SmallFile.link("/proc/self/fd/\(descriptor)") == "anon_inode:[eventpoll]"
    }

    /// Waits, with no time limit, for a nested or polled loop to wake or for an interrupt: the
    /// watcher's one wait.
    func wait(into wakes: inout Wakes) {
        wakes = Wakes()
        // (On the stack: the watcher waits once per idle loop's wake.)
        withUnsafeTemporaryAllocation(of: epoll_event.self, capacity: 16) { events in
            do {
                // (Cut short by a signal, it waits again.)
                let count = try SystemCall.check("epoll_wait") { epoll_wait(watching, events.baseAddress, 16, -1) }
                for event in events[0..<Int(max(0, count))] {
                    switch event.data.u64 {
                    case Self.interruptKey:
                        var value: UInt64 = 0
                        _ = read(interruptEvent, &value, 8)
                        wakes.interrupted = true
                    case Self.ringKey:
                        ring?.drain { key, result in
                            guard key != UnsafeLoopWakeRing.cancelKey else { return }
                            let known = polls.withLock { polls -> Bool in
                                guard polls.armed.remove(key) != nil else { return false }
                                // A poll the kernel refused: that loop is nested from now on (and
                                // stepped now, to be watched again).
                                if result < 0 { polls.unpolled.insert(key) }
                                return true
                            }
                            if known { wakes.loops.append(key) }
                        }
                    default: wakes.loops.append(event.data.u64)
                    }
                }
            } catch {
                // Not expected (our own instance): the watcher waits again.
            }
        }
    }

    /// Wakes the watcher from its wait (it has loops to add or remove): one `write` to an eventfd.
    func interrupt() {
        var one: UInt64 = 1
        _ = write(interruptEvent, &one, 8)
    }
}
