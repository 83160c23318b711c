import HangWatchReport

extension HangMonitor {
    /// A run-loop activity, as reported to run-loop observers. Raw values are CoreFoundation's
    /// `CFRunLoopActivity` bits.
    public enum Activity: UInt8, CaseIterable, Sendable, Hashable, CustomStringConvertible {
        case entry = 1
        case beforeTimers = 2
        case beforeSources = 4
        case beforeWaiting = 32
        case afterWaiting = 64
        case exit = 128

        public var description: String { RunLoopActivityName.of(rawValue) }

        /// Parses the names used in configuration (`beforeSources`, `before-sources`, `before_sources`).
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
