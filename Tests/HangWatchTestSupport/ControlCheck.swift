import Testing

/// The one way a test may cancel itself: its control (what shows the test can see the effect at
/// all, not the code under test) could not run here, and it says why. A cancelled test does not
/// fail the run, so nothing else may cancel: an expectation about the product that a busy machine
/// breaks is a failure, or its bound is wrong. `make test` (scripts/test-all) lists every
/// cancellation and fails the run on one whose reason does not start with `reasonPrefix`.
public enum ControlCheck {
    /// What every allowed cancellation's reason starts with.
    public static let reasonPrefix = "the control could not run: "

    /// Cancels the running test: its control could not run, because `why`.
    public static func cannotRun(_ why: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Never {
        try Test.cancel(Comment(rawValue: reasonPrefix + why), sourceLocation: sourceLocation)
    }
}
