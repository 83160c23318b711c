import HangWatchReport

extension HangMonitor {
    /// A run-loop activity, as reported to run-loop observers. Raw values are CoreFoundation's
    /// `CFRunLoopActivity` bits.
    ///
    /// One iteration of a run loop goes ``entry``, then ``beforeTimers``, ``beforeSources``,
    /// ``beforeWaiting``, the sleep, ``afterWaiting``, repeated, and ``exit``. The activities in
    /// ``Configuration/busyActivities`` start busy time; the next activity ends it.
    public enum Activity: UInt8, CaseIterable, Sendable, Hashable, CustomStringConvertible {
        /// The loop starts a run (`CFRunLoopRunInMode`, `RunLoop.run`), nested runs included.
        case entry = 1
        /// The loop is about to fire its due timers.
        case beforeTimers = 2
        /// The loop is about to run its version-0 sources and queued blocks: work follows.
        case beforeSources = 4
        /// The loop is about to sleep in the kernel: never busy.
        case beforeWaiting = 32
        /// The loop woke: a timer, the main dispatch queue or a port's message is about to run.
        case afterWaiting = 64
        /// The loop ends a run.
        case exit = 128

        /// The activity's name as configuration and reports spell it (`beforeSources`).
        public var description: String { RunLoopActivityName.of(rawValue) }

        /// Parses the names used in configuration (`beforeSources`, `before-sources`, `before_sources`).
        ///
        /// - Parameter name: An activity's name in any case, with or without `-` or `_` between
        ///   its words.
        /// - Returns: Nil when `name` names no activity.
        public init?(name: String) {
            let normalized = name.lowercased().filter { $0.isLetter }
            guard let match = Activity.allCases.first(where: { $0.description.lowercased() == normalized }) else {
                return nil
            }
            self = match
        }

        /// Bit mask of a set of activities.
        static func mask(_ activities: Set<Activity>) -> UInt8 {
            activities.reduce(0) { $0 | $1.rawValue }
        }

        /// The activity named by a raw observer value, if it is a single known activity.
        static func named(_ raw: UInt8) -> String {
            RunLoopActivityName.of(raw)
        }
    }
}
