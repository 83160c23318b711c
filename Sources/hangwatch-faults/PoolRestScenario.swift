import Foundation
import HangWatch
import Synchronization

// hangwatch-faults pool --mode rest --seconds S: the pool watch at rest, woken.
//   1. Waits until the pool watch rests (every pool thread idle for a second), then one task
//      awaits `poolJobRoute` (S seconds in `usleep`, S seconds computing): the task's enqueue must
//      wake the watch.
//   2. Waits until it rests again, then starts a task that sleeps 3 s (`Task.sleep`) and then
//      holds its thread S seconds in `usleep` (`holdPoolThreadAfterSleeping`). The watch goes back
//      to rest while the task sleeps; the resumption is not enqueued again, so the watch must be
//      awake by its due time.
//   3. Waits until it rests again and libdispatch's idle workers exited (5 s idle), then one task
//      computes S seconds (`holdPoolThreadComputing`) on a fresh worker.
//   Prints each step's start and end (milliseconds since the Unix epoch) as `holds`, when the
//   watch was found resting before each task (0: it never rested within 10 s), and how many pool
//   workers existed before the first task (0: the watch's first rest, dormant, made none).

@inline(never)
func holdPoolThreadAfterSleeping(seconds: Double, sleep: Duration) async -> HeldStep {
    try? await Task.sleep(for: sleep)
    return await holdPoolThreadSleeping(seconds: seconds)
}

func runPoolRest(_ options: Options, monitor: HangMonitor) -> Never {
    func rests() -> Int { monitor.statistics.concurrencyPool.rests }
    /// Waits (10 s at most) until the watch rested more than `count` times; when, Unix ms (0: never).
    func restedAt(after count: Int) -> Double {
        let deadline = Date().addingTimeInterval(10)
        while rests() <= count, Date() < deadline { usleep(10_000) }
        return rests() > count ? Date().timeIntervalSince1970 * 1000 : 0
    }
    let seconds = options.seconds
    let routeSteps = Mutex<[HeldStep]>([])
    let sleepSteps = Mutex<[HeldStep]>([])
    let group = DispatchGroup()

    let firstRest = restedAt(after: 0)
    let workersBeforeFirstTask = poolThreadIDs().count
    group.enter()
    Task.detached(priority: .medium) {
        let route = await poolJobRoute(seconds: seconds)
        routeSteps.withLock { $0 += route }
        group.leave()
    }
    group.wait()

    let secondRest = restedAt(after: rests())
    let restsBeforeSleep = rests()
    group.enter()
    Task.detached(priority: .medium) {
        let step = await holdPoolThreadAfterSleeping(seconds: seconds, sleep: .seconds(3))
        sleepSteps.withLock { $0.append(step) }
        group.leave()
    }
    let restWhileSleeping = restedAt(after: restsBeforeSleep)
    group.wait()

    // 3. Rested long enough for libdispatch to let its idle workers exit (5 s), a task computes:
    //    it runs on a fresh worker, which must have been prepared for captures before the job.
    let restsBeforeReap = rests()
    let thirdRest = restedAt(after: restsBeforeReap)
    let reapDeadline = Date().addingTimeInterval(15)
    while !poolThreadIDs().isEmpty, Date() < reapDeadline { usleep(100_000) }
    let workersLeft = poolThreadIDs().count
    let computeSteps = Mutex<[HeldStep]>([])
    group.enter()
    Task.detached(priority: .medium) {
        let step = await holdPoolThreadComputing(seconds: seconds)
        computeSteps.withLock { $0.append(step) }
        group.leave()
    }
    group.wait()
    let deadline = Date().addingTimeInterval(10)
    while monitor.statistics.reportsWritten + monitor.statistics.writeFailures < 4, Date() < deadline {
        usleep(20_000)
    }
    usleep(500_000)
    monitor.stop()
    let holds = (routeSteps.withLock { $0 } + sleepSteps.withLock { $0 } + computeSteps.withLock { $0 }).map(\.json).joined(separator: ",")
    print(
        "{\"holds\":[\(holds)],\"restedAtUnixMs\":[\(firstRest),\(secondRest),\(restWhileSleeping),\(thirdRest)],\"workersLeft\":\(workersLeft),"
            + "\"workersBeforeFirstTask\":\(workersBeforeFirstTask),"
            + "\"rests\":\(rests()),\"reportsWritten\":\(monitor.statistics.reportsWritten),"
            + "\"starvations\":\(monitor.statistics.concurrencyPool.starvations)}")
    exit(0)
}
