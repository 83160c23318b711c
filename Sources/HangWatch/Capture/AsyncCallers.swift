/// The async callers of the async function a captured stack runs: Swift calls between async
/// functions are tail calls, so the thread's stack holds only the partial function running now
/// (called by the concurrency runtime's job loop); its callers are read from the chain of async
/// contexts in the heap. Reports place them right after that function's frame.
package struct AsyncCallers: Sendable, Equatable {
    /// How the chain ended.
    package enum End: String, Sendable, Equatable {
        /// At the task's first context: every caller is there.
        case complete
        /// At the cap (64 callers).
        case limit = "async caller limit"
        /// A context could not be read.
        case unreadable = "async context unreadable"
        /// A context failed a check (misaligned, no resume function, a loop).
        case invalid = "async context invalid"
        /// A resume address was not provably a function's start (`ImageMap.isAsyncResumeStart`).
        case unproven = "async resume address unproven"
    }

    /// Index in the stack's frames of the async function the runtime called.
    package var after: Int
    /// Each caller's resume address (a partial function's entry, not a return address), innermost first.
    package var resumeAddresses: [UInt]
    package var end: End
    /// The heap addresses of the async function's own context and of the last context read (the
    /// task's first when the chain is complete): which activation of the function ran, for telling
    /// one job that holds a pool thread from the next (`HeldJobTracker`). Not in reports.
    package var contexts: (first: UInt, last: UInt)?

    package init(after: Int, resumeAddresses: [UInt], end: End, contexts: (first: UInt, last: UInt)? = nil) {
        self.after = after
        self.resumeAddresses = resumeAddresses
        self.end = end
        self.contexts = contexts
    }

    package static func == (lhs: AsyncCallers, rhs: AsyncCallers) -> Bool {
        lhs.after == rhs.after && lhs.resumeAddresses == rhs.resumeAddresses && lhs.end == rhs.end
            && lhs.contexts?.first == rhs.contexts?.first && lhs.contexts?.last == rhs.contexts?.last
    }

    /// Keeps the callers up to the first whose resume address is not provably a function's first
    /// instruction (`isResumeStart`: `ImageMap.isAsyncResumeStart`): an address read from the heap
    /// proves nothing unless it is one. The chain then ends `unproven`.
    package func proven(isResumeStart: (UInt) -> Bool) -> AsyncCallers {
        var kept: [UInt] = []
        for address in resumeAddresses {
            guard isResumeStart(address) else {
                return AsyncCallers(after: after, resumeAddresses: kept, end: .unproven, contexts: contexts)
            }
            kept.append(address)
        }
        return self
    }
}
