@testable import HangWatch
@_spi(Internal) import HangWatchReport
import Testing

/// A main-queue hang's kind from the tasks the reads around its samples found (`QueueHangKind`).
struct QueueHangKindTests {
    static func sightings(_ reads: [(UInt64?, UInt64)]) -> SampledTasks {
        var tasks = SampledTasks()
        for (task, milliseconds) in reads { tasks.note(task, at: milliseconds * 1000) }
        return tasks
    }

    @Test func oneTaskAtEveryReadOverAThresholdIsOneJob() throws {
        let tasks = Self.sightings([(7, 200), (7, 200), (7, 250), (7, 250), (7, 450), (7, 450)])
        let kind = try #require(QueueHangKind.decide(tasks, samples: 3, thresholdMicroseconds: 200_000))
        #expect(kind.name == "oneJob" && kind.reason == "the same task (id 7) at every read, 250 ms apart: one job past the threshold")
        // Under a threshold apart: the job may have begun just before the first sample.
        let short = Self.sightings([(7, 200), (7, 200), (7, 250), (7, 250)])
        #expect(QueueHangKind.decide(short, samples: 2, thresholdMicroseconds: 200_000)?.name == "unknown")
        // One read found no task: not every sample ran it.
        let gap = Self.sightings([(7, 200), (nil, 200), (7, 450), (7, 450)])
        #expect(QueueHangKind.decide(gap, samples: 2, thresholdMicroseconds: 200_000)?.reason == "task 7 at 3 of 4 reads; the others found no task running")
    }

    @Test func severalTasksAreCountedAndNoReadFindingATaskGivesNoKind() throws {
        let tasks = Self.sightings([(7, 200), (8, 200), (8, 250), (9, 250), (0, 300), (9, 300)])
        let kind = try #require(QueueHangKind.decide(tasks, samples: 3, thresholdMicroseconds: 200_000))
        #expect(kind.name == "unknown" && kind.reason.hasPrefix("3 tasks ran at 3 samples (6 reads): at least 3 jobs held the queue"))
        #expect(QueueHangKind.decide(Self.sightings([(nil, 200), (0, 250)]), samples: 1, thresholdMicroseconds: 200_000) == nil)
        #expect(QueueHangKind.decide(nil, samples: 3, thresholdMicroseconds: 200_000) == nil)
    }

    @Test func readsAddUp() {
        let early = Self.sightings([(7, 100), (7, 150)])
        let late = Self.sightings([(7, 200), (nil, 200), (8, 400)])
        let sum = early.adding(late)
        #expect(sum.reads == 5 && sum.empty == 1 && sum.distinct == [7, 8])
        #expect(sum.firstMicroseconds == 100_000 && sum.lastMicroseconds == 400_000)
        #expect(SampledTasks().adding(early) == early)
    }
}

/// A run-loop hang's kind from the piece before it and the tasks its reads found
/// (`RunLoopHangKind.fromTasks`).
struct RunLoopTaskKindTests {
    static let piece = HangReport.Kind(name: .unknown, reason: "one piece past the threshold from the loop's wake", iterationsBefore: 0, busyBeforeMs: 0)

    @Test func oneTaskAtEveryReadOverAThresholdIsOneJobKeepingTheStretch() {
        // A wake's read at 100 ms, then two samples' reads each.
        let tasks = QueueHangKindTests.sightings([(7, 100), (7, 205), (7, 205), (7, 355), (7, 355)])
        let kind = RunLoopHangKind.fromTasks(tasks, samples: 2, thresholdMicroseconds: 200_000, piece: Self.piece)
        #expect(kind.name == "oneJob")
        #expect(kind.reason == "the same task (id 7) at every read, 255 ms apart, in one turn of the loop: one job past the threshold")
        #expect(kind.iterationsBefore == 0 && kind.busyBeforeMs == 0)
        // Without the wake's read: 150 ms apart, not proven; the piece's reason says what was read.
        let samplesOnly = QueueHangKindTests.sightings([(7, 205), (7, 205), (7, 355), (7, 355)])
        let unproven = RunLoopHangKind.fromTasks(samplesOnly, samples: 2, thresholdMicroseconds: 200_000, piece: Self.piece)
        #expect(unproven.name == "unknown")
        #expect(unproven.reason.hasSuffix("; the same task (id 7) at every read, 150 ms apart: not proven past the threshold by itself"))
    }

    @Test func severalTasksOrNoneOrABacklogBeforeKeepThePiecesKind() {
        let many = QueueHangKindTests.sightings([(7, 205), (8, 205), (9, 255), (9, 255)])
        let counted = RunLoopHangKind.fromTasks(many, samples: 2, thresholdMicroseconds: 200_000, piece: Self.piece)
        #expect(counted.name == "unknown" && counted.reason.hasSuffix("; 3 tasks ran at 2 samples (4 reads): at least 3 jobs in the piece"))
        // A read that found no task: a block or a timer may have run then.
        let gap = QueueHangKindTests.sightings([(7, 100), (nil, 205), (7, 355), (7, 355), (7, 400)])
        #expect(RunLoopHangKind.fromTasks(gap, samples: 3, thresholdMicroseconds: 200_000, piece: Self.piece) == Self.piece)
        #expect(RunLoopHangKind.fromTasks(nil, samples: 3, thresholdMicroseconds: 200_000, piece: Self.piece) == Self.piece)
        // A backlog before the piece stays `mixed`, whatever held the piece.
        let mixed = HangReport.Kind(name: .mixed, reason: "20 iterations without sleeping", iterationsBefore: 20, busyBeforeMs: 300)
        let one = QueueHangKindTests.sightings([(7, 100), (7, 205), (7, 205), (7, 355), (7, 355)])
        #expect(RunLoopHangKind.fromTasks(one, samples: 2, thresholdMicroseconds: 200_000, piece: mixed) == mixed)
    }
}
