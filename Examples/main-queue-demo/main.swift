// main-queue-demo: docs/runloopcore.md's example, as a program (`swift run main-queue-demo`).
// MainQueueProcessTests checks that docs/runloopcore.md shows exactly this code and that it runs.
import Dispatch
import RunLoopCore

let loop = Loop.main                             // the main thread's loop; it also serves the main dispatch queue

// A repeating timer on a 10 ms grid, allowed to fire up to 1 ms late so wake-ups can coalesce.
let tick = LoopTimer(after: .milliseconds(10), interval: .milliseconds(10), tolerance: .milliseconds(1),
                     label: "tick") { timer in
    print("late by", timer.nextFireDate.duration(to: .now))
}
loop.add(tick, forMode: .default)

// A custom source another thread signals; signalling does not wake the loop, signalAndWakeUp() does.
let work = LoopSource(label: "work") { print("work to do") }
loop.add(work, forMode: .common)

// Observers see the six activities in CFRunLoop's order.
loop.add(LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in print(activity) },
         forMode: .default)

// Blocks performed from any thread run on the loop's thread, FIFO, and wake it.
DispatchQueue.global().async {
    loop.perform { print("hello from the loop thread") }
    work.signalAndWakeUp()
}

// While Loop.main runs a common mode it serves the main queue: @MainActor jobs and DispatchQueue.main blocks run
// on it (at step 9 of an iteration), and their arrival from any thread wakes it. A private mode leaves them waiting.
Task { @MainActor in
    print("a @MainActor task on the main thread")
    try? await Task.sleep(for: .milliseconds(50))   // resumes through the main queue too
    loop.stop()
}
DispatchQueue.main.async { print("a DispatchQueue.main block") }

let result = loop.run(mode: .default, timeout: .seconds(1))   // .finished, .stopped, .timedOut or .handledSource
print(result)
