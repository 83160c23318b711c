/// An event loop's flight recorder, written from its edges' decisions (`EventLoopEdges`), not by
/// the loop: the loop runs no code of ours at its edges, and its latch is written only for a hang
/// (`ActivityLatch.sourceLeadUp`). Every change of the edges' phase, made under their lock (by the
/// watchdog's looks and the watcher's wakes, or by a ping's answer on the loop), becomes the
/// recorder's pieces (`pieces`): a wake from idle begins a stretch; a boundary the edges learnt
/// (a ping's answer, the end of an iteration, a blocking call's start) ends a piece and begins
/// the next; a look that found the loop in its wait ends the stretch.
///
/// How exact: a stretch begins at the loop's wake (exact, from its epoll instance). It ends at
/// the end of the loop's last iteration where the loop reports its iterations, else at the look
/// that found it waiting, up to a look interval (at most a 25th of the threshold) after the loop
/// went back to its wait: short stretches read that much long, so busy time is an upper bound.
/// Under load a piece runs from one known boundary to the next, which may hold many iterations:
/// `longestMs` is an upper bound on the longest iteration, and the recorder counts no iterations.
/// It is written only while the edges are exact (`EventLoopActivitySource.exactSinceUnits`).
struct EventLoopLeadUp: @unchecked Sendable {
    let recorder: UnsafeLeadUpRecorder

    /// What a change of phase tells the recorder (monotonic nanoseconds).
    enum Piece: Equatable, Sendable {
        /// The loop woke from idle: a stretch begins.
        case began(at: UInt64)
        /// A piece ended; `endsStretch`: the loop went back to its wait then.
        case ended(from: UInt64, to: UInt64, endsStretch: Bool)
    }

    /// The pieces a change of phase from `before` to `after` at `now` makes. `finishedAt`: the end
    /// of the loop's last iteration, where it reports one (a loop found in its wait finished
    /// then). `sleptSince`: the loop was found in its wait after an iteration that ended then,
    /// busy again from `after`'s start at the earliest (it slept in between).
    static func pieces(
        from before: EventLoopEdges.Phase, to after: EventLoopEdges.Phase, at now: UInt64, finishedAt: UInt64? = nil,
        sleptSince: UInt64? = nil
    ) -> [Piece] {
        switch (before, after) {
        case (.idle, .busy(let since, _, _, _)):
            return [.began(at: since)]
        case (.busy(let since, _, _, _), .idle):
            let end = finishedAt.flatMap { $0 >= since && $0 <= now ? $0 : nil } ?? max(now, since)
            return [.ended(from: since, to: end, endsStretch: true)]
        case (.busy(let since, _, _, _), .busy(let next, _, _, _)) where next > since:
            if let slept = sleptSince, slept > since, slept < next {
                return [.ended(from: since, to: slept, endsStretch: true), .began(at: next)]
            }
            return [.ended(from: since, to: next, endsStretch: false)]
        default:
            return []
        }
    }

    /// Writes `pieces` (under the edges' lock: one writer at a time, in order).
    func record(_ pieces: [Piece]) {
        for piece in pieces {
            switch piece {
            case .began(let at): recorder.beginStretch(at: at >> 10, iteration: false)
            case .ended(let from, let to, let endsStretch):
                recorder.endPiece(from: from >> 10, to: to >> 10, endsStretch: endsStretch, iteration: false)
            }
        }
    }
}
