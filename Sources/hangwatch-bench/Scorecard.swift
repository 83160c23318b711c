import Foundation

/// What a run came to, goal by goal: each measured value judged against its `Goal`, each figure
/// that could not run (and why), each one skipped by name. The run fails (exit 1) when a goal is
/// missed beyond its noise or a figure could not run without being skipped.
struct Scorecard {
    enum Verdict: Equatable {
        case met
        /// Missed, but by no more than the figure's noise: reported, not a failure.
        case missedWithinNoise
        case missed

        var mark: String {
            switch self {
            case .met: "ok"
            case .missedWithinNoise: "missed within noise"
            case .missed: "MISSED"
            }
        }
    }

    struct Judged {
        var goal: Goal
        var value: Double
        /// The value as the table shows it.
        var shown: String
        var verdict: Verdict
    }

    /// What could not be measured: a figure or a single goal, and why.
    struct Unmeasured {
        var name: String
        var reason: String
    }

    /// What the run was asked for: figures (nil: all) and the figures or goals to skip.
    var selected: Set<String>?
    var skips: Set<String> = []

    private(set) var judged: [Judged] = []
    private(set) var couldNotRun: [Unmeasured] = []
    private(set) var skipped: [Unmeasured] = []

    func wanted(_ figure: String) -> Bool { selected?.contains(figure) ?? true }

    func isSkipped(_ name: String) -> Bool { skips.contains(name) }

    /// Judges `value` against goal `id` (a programmer's mistake if there is no such goal); nil when
    /// the goal was skipped by name.
    @discardableResult
    mutating func judge(_ id: String, _ value: Double, shown: String) -> Verdict? {
        guard let goal = Goal.named(id) else { preconditionFailure("no goal \(id) in Goals.swift") }
        guard !isSkipped(id) else {
            skipped.append(Unmeasured(name: id, reason: "asked to (--skip); measured \(shown)"))
            return nil
        }
        let verdict: Verdict = goal.meets(value) ? .met : goal.missedBeyondNoise(value) ? .missed : .missedWithinNoise
        judged.removeAll { $0.goal.id == id }
        judged.append(Judged(goal: goal, value: value, shown: shown, verdict: verdict))
        return verdict
    }

    /// A goal the run leaves out by design (`--quick` does not wait for it), with why.
    mutating func leaveOut(_ id: String, reason: String) {
        skipped.append(Unmeasured(name: id, reason: reason))
    }

    /// A figure (or one goal of it) could not be measured: a failure, unless it was skipped by name.
    mutating func couldNotMeasure(_ name: String, reason: String) {
        if isSkipped(name) || Goal.named(name).map({ isSkipped($0.runBy) }) == true {
            skipped.append(Unmeasured(name: name, reason: reason))
        } else {
            couldNotRun.append(Unmeasured(name: name, reason: reason))
        }
    }

    mutating func skip(_ figure: String) {
        skipped.append(Unmeasured(name: figure, reason: "asked to (--skip)"))
    }

    /// The goals of the figures that ran and the goals asked for that no figure judged: a figure
    /// that forgot one is a failure too, so no goal is silently dropped.
    var unjudged: [Goal] {
        let out = Set(couldNotRun.map(\.name) + skipped.map(\.name))
        return Goal.all.filter { goal in
            wanted(goal.runBy) && !out.contains(goal.runBy) && !out.contains(goal.id) && !judged.contains { $0.goal.id == goal.id }
        }
    }

    var missed: [Judged] { judged.filter { $0.verdict == .missed } }

    var passed: Bool { missed.isEmpty && couldNotRun.isEmpty && unjudged.isEmpty }

    /// The summary: every goal missed (by id, value, goal and noise), every figure that could not
    /// run or was skipped, and the verdict.
    var summary: [String] {
        var lines: [String] = []
        let met = judged.filter { $0.verdict == .met }.count
        let within = judged.filter { $0.verdict == .missedWithinNoise }
        lines.append("goals: \(judged.count) judged, \(met) met, \(within.count) missed within noise, \(missed.count) missed beyond noise")
        func describe(_ result: Judged) -> String {
            "\(result.goal.id) (figure \(result.goal.figure): \(result.goal.measures)): \(result.shown), goal \(result.goal.boundText), noise \(result.goal.noiseText)"
        }
        for result in within { lines.append("  missed within noise: " + describe(result)) }
        for result in missed { lines.append("  MISSED: " + describe(result)) }
        for entry in couldNotRun {
            lines.append("  COULD NOT RUN: \(entry.name): \(entry.reason) (to run without it: --skip \(entry.name), or make bench BENCH_SKIP=\(entry.name))")
        }
        for goal in unjudged { lines.append("  NOT JUDGED: \(goal.id) (figure \(goal.runBy) ran but measured no value for it)") }
        for entry in skipped { lines.append("  skipped: \(entry.name): \(entry.reason)") }
        if passed {
            lines.append("hangwatch-bench: every goal judged was met" + (within.isEmpty ? "" : " (within noise for \(within.count))"))
        } else {
            var failures: [String] = []
            if !missed.isEmpty { failures.append("missed: " + missed.map(\.goal.id).joined(separator: ", ")) }
            if !couldNotRun.isEmpty { failures.append("could not run: " + couldNotRun.map(\.name).joined(separator: ", ")) }
            if !unjudged.isEmpty { failures.append("not judged: " + unjudged.map(\.id).joined(separator: ", ")) }
            lines.append("hangwatch-bench: FAILED (" + failures.joined(separator: "; ") + ")")
        }
        return lines
    }
}
