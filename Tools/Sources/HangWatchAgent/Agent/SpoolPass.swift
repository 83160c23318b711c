/// What one pass of the agent's worker covers.
enum SpoolPass: Sendable, Equatable {
    /// List the whole spool, then everything else.
    case full
    /// List these service directories (and the root's own files), then everything else.
    case services(Set<String>)
    /// Only what changes without a file changing: dead hangs, heartbeats, retention, naming.
    case liveness
}
