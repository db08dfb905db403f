import RunLoopCore
import Tracing

/// Repeating timers on one loop, started a little apart so their fire dates spread over the interval.
struct TimersWorkload {
    let timers: Int
    let interval: Duration
    let tolerance: Duration
    let handlerCost: Duration
    let duration: Duration

    func run(recorder: CalloutLatencyRecorder) -> String {
        let loop = Loop.current
        let start = Loop.Instant.now.advanced(by: .milliseconds(5))
        let spread = interval / timers
        var all: [LoopTimer] = []
        for index in 0..<timers {
            let timer = LoopTimer(fireAt: start.advanced(by: spread * index), interval: interval, tolerance: tolerance,
                                  label: "timer-\(index)") { _ in burn(handlerCost) }
            loop.add(timer, forMode: .default)
            all.append(timer)
        }
        let before = loop.statistics
        loop.run(mode: .default, timeout: duration)
        for timer in all { timer.invalidate() }
        let after = loop.statistics
        return recorder.report(title: "timers: \(timers) × \(interval) (tolerance \(tolerance), handler \(handlerCost)) for \(duration)",
                               wakeUps: after.sleeps - before.sleeps, iterations: after.iterations - before.iterations)
    }
}

/// Producer threads performing no-op (or costly) blocks on one loop.
struct BlocksWorkload {
    let threads: Int
    let duration: Duration
    let handlerCost: Duration

    func run(recorder: CalloutLatencyRecorder) -> String {
        let loop = Loop.current
        let keepAlive = LoopSource {}
        loop.add(keepAlive, forMode: .default)
        let deadline = Loop.Instant.now.advanced(by: duration)
        let producers = (0..<threads).map { _ in
            ProducerThread {
                while Loop.Instant.now < deadline {
                    loop.perform { burn(handlerCost) }
                    for _ in 0..<64 { loop.perform { burn(handlerCost) } }
                }
            }
        }
        let before = loop.statistics
        loop.run(mode: .default, timeout: duration)
        producers.forEach { $0.join() }
        loop.run(mode: .default, timeout: .zero)
        keepAlive.invalidate()
        let after = loop.statistics
        return recorder.report(title: "blocks: \(threads) producer threads for \(duration) (handler \(handlerCost))",
                               wakeUps: after.sleeps - before.sleeps, iterations: after.iterations - before.iterations)
    }
}

/// Spins for `cost` to simulate a handler's work.
func burn(_ cost: Duration) {
    guard cost > .zero else { return }
    let end = Loop.Instant.now.advanced(by: cost)
    while Loop.Instant.now < end {}
}
