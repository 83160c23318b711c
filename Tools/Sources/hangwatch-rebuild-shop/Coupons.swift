// A hang site only the second build has (HANGWATCH_REBUILD_VARIANT=2): what a release brought,
// which `hangwatch diff` must mark `new` (RebuildGroupingTests). Like Padding.swift, its code
// comes before the sites the two builds share.
#if REBUILD_VARIANT_2
enum Coupons {
    /// Computes (a new call path to `spin`).
    @inline(never)
    static func apply() -> UInt64 { spin(milliseconds: Sites.hangMilliseconds) }

    /// The site as main.swift runs it (on the loop, from a timer).
    static let site: @Sendable () -> Void = { sink &+= apply() }
}
#endif
