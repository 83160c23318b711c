import Foundation
import HangWatch
import HangWatchSymbolication

/// How one blocked-thread stack compares with the ground truth.
enum Verdict: String, Sendable {
    case exact
    /// A prefix of the truth, marked truncated.
    case truncated
    case wrong
}

/// Compares `blocked` (frames, innermost first; `truncated` as the walk marked it) with `truth`.
func compare(blocked: [UInt], truncated: Bool, truth: [UInt]) -> Verdict {
    if blocked == truth && !truncated { return .exact }
    if truncated && !blocked.isEmpty && blocked.count <= truth.count && Array(truth.prefix(blocked.count)) == blocked {
        return .truncated
    }
    return .wrong
}

struct CaseResult: Sendable {
    var name: String
    var exact = 0
    var truncated = 0
    var wrong = 0
    /// Samples dropped because the ground truth was unusable (the thread moved, or its own walk stopped early).
    var discarded = 0
    /// Samples equal to the truth whose names lack the case's chain (counted as wrong).
    var chainMissing = 0
    /// Signal samples whose innermost frame was in the vDSO (the CPU cases).
    var inVDSO = 0
    var truncations: [String: Int] = [:]
    var framePointers: [String: Int] = [:]
    var error: String?
}

struct CorpusResults: Sendable {
    var cases: [CaseResult]
    var build: String

    var wrong: Int { cases.reduce(0) { $0 + $1.wrong } + cases.filter { $0.error != nil }.count }

    var table: String {
        var lines = ["build: \(build)", "CASE                       EXACT  TRUNC  WRONG  DISCARDED  NOTES"]
        for result in cases {
            var notes = result.error ?? (result.truncations.map { "\($0.key) ×\($0.value)" } + result.framePointers.map { "fp \($0.key) ×\($0.value)" }).sorted().joined(separator: ", ")
            if result.inVDSO > 0 { notes += (notes.isEmpty ? "" : ", ") + "in the vDSO ×\(result.inVDSO)" }
            if result.chainMissing > 0 { notes += (notes.isEmpty ? "" : ", ") + "chain missing ×\(result.chainMissing)" }
            lines.append(
                result.name.padding(toLength: 26, withPad: " ", startingAt: 0)
                    + String(format: " %5d  %5d  %5d  %9d  ", result.exact, result.truncated, result.wrong, result.discarded) + notes)
        }
        let exact = cases.reduce(0) { $0 + $1.exact }, truncated = cases.reduce(0) { $0 + $1.truncated }
        lines.append("total: \(exact) exact, \(truncated) truncated, \(wrong) wrong")
        return lines.joined(separator: "\n")
    }

    var json: String {
        let objects = cases.map { result -> [String: Any] in
            var object: [String: Any] = [
                "name": result.name, "exact": result.exact, "truncated": result.truncated, "wrong": result.wrong,
                "discarded": result.discarded, "truncations": result.truncations, "framePointers": result.framePointers,
                "inVDSO": result.inVDSO, "chainMissing": result.chainMissing,
            ]
            if let error = result.error { object["error"] = error }
            return object
        }
        let data = try! JSONSerialization.data(withJSONObject: ["build": build, "cases": objects], options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}

/// Waits until the target is blocked in the same system call for two looks 5 ms apart.
func waitUntilBlocked(_ target: CaptureProbe.Target, timeout: TimeInterval = 5) -> Int? {
    let deadline = Date().addingTimeInterval(timeout)
    var previous: Int?
    while Date() < deadline {
        let now = CaptureProbe.blockedSyscall(target)
        if let now, now == previous { return now }
        previous = now
        usleep(5000)
    }
    return nil
}

func runCorpus(options: Options, target: CaptureProbe.Target) -> CorpusResults {
    #if DEBUG
    let build = "debug"
    #else
    let build = "release"
    #endif
    var results: [CaseResult] = []
    let names = Names()
    for corpusCase in corpusCases where options.cases?.contains(corpusCase.name) ?? true {
        var result = CaseResult(name: corpusCase.name)
        defer { results.append(result) }
        released.store(false, ordering: .sequentiallyConsistent)
        entered.store(false, ordering: .sequentiallyConsistent)
        let run: Run
        do {
            run = try corpusCase.prepare()
        } catch {
            result.error = "\(error)"
            continue
        }
        pending.withLock { $0 = run }
        let target = corpusCase.onEventLoop ? CorpusEventLoop.shared.target : target
        if corpusCase.running {
            while !entered.load(ordering: .sequentiallyConsistent) { usleep(1000) }
            sampleRunning(corpusCase, target: target, samples: options.samples, verbose: options.verbose, names: names, into: &result)
        }
        var attempts = 0
        while !corpusCase.running && result.exact + result.truncated + result.wrong < options.samples && attempts < options.samples * 3 {
            attempts += 1
            // Blocked in the case's call (not the run loop's own wait): the case has begun.
            while !entered.load(ordering: .sequentiallyConsistent) { usleep(1000) }
            guard waitUntilBlocked(target) != nil else {
                result.error = "the thread never blocked"
                break
            }
            let blocked = CaptureProbe.sample(target, signal: signal)
            guard blocked.method == "syscall" || blocked.method == "unchanged", let truth = CaptureProbe.signalCapture(target, signal: signal)
            else {
                result.discarded += 1
                continue
            }
            // The truth is usable when its walk reached the outermost frame and it was taken at the
            // same instruction (the thread had not moved on). For a call the kernel restarts after the
            // handler (SA_RESTART), the handler sees the program counter moved back onto the 2-byte
            // `syscall` instruction.
            var truthFrames = truth.frames
            if let first = truthFrames.first, let pc = blocked.frames.first, first &+ 2 == pc { truthFrames[0] = pc }
            guard !truth.truncated, truthFrames.first == blocked.frames.first, !blocked.frames.isEmpty else {
                result.discarded += 1
                if options.verbose { print("\(corpusCase.name): truth unusable (\(truth.frames.count) frames, truncated \(truth.truncated))") }
                continue
            }
            var verdict = compare(blocked: blocked.frames, truncated: blocked.truncated, truth: truthFrames)
            // A stack equal to the truth must also hold the case's chain, in order, by name: the truth
            // itself rests on proofs where code has no call-frame information (the same rules).
            if verdict == .exact && !names.holdsInOrder(blocked.frames, corpusCase.chain) {
                verdict = .wrong
                result.chainMissing += 1
            }
            switch verdict {
            case .exact: result.exact += 1
            case .truncated: result.truncated += 1
            case .wrong: result.wrong += 1
            }
            if let reason = blocked.truncation { result.truncations[reason, default: 0] += 1 }
            if let framePointer = blocked.framePointer { result.framePointers[framePointer, default: 0] += 1 }
            if options.verbose && verdict != .exact || options.verbose && attempts == 1 {
                print("\(corpusCase.name) sample \(attempts): \(verdict.rawValue) \(blocked.truncation ?? "")")
                print("  blocked: " + names.describe(blocked.frames))
                print("  truth:   " + names.describe(truthFrames))
            }
        }
        released.store(true, ordering: .sequentiallyConsistent)
        run.release()
        if finished.wait(timeout: .now() + 10) == .timedOut {
            result.error = "the case did not return after its release"
            break
        }
    }
    return CorpusResults(cases: results, build: build)
}

/// A thread on a CPU is sampled with the capture signal, as the watchdog samples it: there is no
/// other ground truth, so each sample must reach the outermost frame and hold the case's chain, in
/// order and adjacent, by name (`exact`); a sample marked truncated counts as `truncated`; anything
/// else is `wrong`.
func sampleRunning(
    _ corpusCase: CorpusCase, target: CaptureProbe.Target, samples: Int, verbose: Bool, names: Names, into result: inout CaseResult
) {
    for index in 0..<samples * 10 {
        let sample = CaptureProbe.sample(target, signal: signal)
        guard sample.method == "signal", !sample.frames.isEmpty else {
            result.discarded += 1
            continue
        }
        let named = sample.frames.enumerated().map { names.name($0.element, innermost: $0.offset == 0) }
        if names.isVDSO(sample.frames[0]) { result.inVDSO += 1 }
        let verdict: Verdict
        if sample.truncated {
            verdict = .truncated
            if let reason = sample.truncation { result.truncations[reason, default: 0] += 1 }
        } else if let first = named.firstIndex(where: { $0.contains(corpusCase.chain[0]) }),
            first + corpusCase.chain.count <= named.count,
            zip(named[first...], corpusCase.chain).allSatisfy({ $0.contains($1) })
        {
            verdict = .exact
        } else {
            verdict = .wrong
        }
        switch verdict {
        case .exact: result.exact += 1
        case .truncated: result.truncated += 1
        case .wrong: result.wrong += 1
        }
        if verbose && (verdict != .exact || index == 0 || names.isVDSO(sample.frames[0]) && result.inVDSO == 1) {
            print("\(corpusCase.name) sample \(index + 1): \(verdict.rawValue) \(sample.truncation ?? "")")
            print("  " + named.map { String($0.prefix(60)) }.joined(separator: " < "))
        }
        if result.exact + result.truncated + result.wrong >= samples { break }
        usleep(2000)
    }
}

/// Function names for the verbose output.
final class Names {
    private var images: [String: ImageSymbols] = [:]

    func name(_ address: UInt, innermost: Bool) -> String {
        guard let location = CaptureProbe.locate(address) else { return String(address, radix: 16) }
        if images[location.path] == nil, location.path.hasPrefix("/") {
            images[location.path] = try? ImageSymbols.open(path: location.path, expectedBuildID: location.buildID, debugDirectories: [])
        }
        let offset = UInt64(innermost ? location.offset : location.offset - 1)
        let symbol = images[location.path]?.lookup(offset: offset)?.symbol
        return symbol ?? "\((location.path as NSString).lastPathComponent)+0x\(String(offset, radix: 16))"
    }

    func isVDSO(_ address: UInt) -> Bool {
        guard let path = CaptureProbe.locate(address)?.path else { return false }
        return path.contains("vdso")
    }

    /// Whether the names of `frames` (innermost first) hold `chain` in order (each a part of a name;
    /// other frames may lie between).
    func holdsInOrder(_ frames: [UInt], _ chain: [String]) -> Bool {
        var links = chain[...]
        for (index, frame) in frames.enumerated() where links.first.map({ name(frame, innermost: index == 0).contains($0) }) == true {
            links = links.dropFirst()
            if links.isEmpty { break }
        }
        return links.isEmpty
    }

    func describe(_ frames: [UInt]) -> String {
        frames.enumerated().map { String(name($0.element, innermost: $0.offset == 0).prefix(60)) }.joined(separator: " < ")
    }
}
