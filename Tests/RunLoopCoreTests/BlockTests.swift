import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rulebook §8: blocks performed in modes.
@Suite struct BlockTests {
    @Test func blocksRunFIFOAndBlocksQueuedByABlockRunOnALaterPass() {
        let (trace, elapsed) = onVirtualLoop { kernel, loop -> (String, Duration) in
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            for index in 1...3 {
                loop.perform(inModes: [.default]) {
                    log.append("B\(index)")
                    if index == 1 { loop.perform(inModes: [.default]) { log.append("B4"); loop.stop() } }
                }
            }
            let start = kernel.now
            loop.run(mode: .default, timeout: .seconds(10))
            return (log.text, kernel.elapsed(since: start))
        }
        // B4 was queued during the step-3 pass: it runs on a later pass (step 9, the perform having woken the
        // loop), not in step 3 and not only when the timeout passes.
        #expect(trace == "Entry BT BS B1 B2 B3 BW AW B4 Exit")
        #expect(elapsed == .zero)
    }

    @Test func blocksWaitForTheirModeAndKeepTheirOrder() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let other: Loop.Mode = "other"
            loop.add(LoopSource {}, forMode: .default)
            loop.add(LoopSource {}, forMode: other)
            loop.perform(inModes: [other]) { log.append("o1") }
            loop.perform(inModes: [.default]) { log.append("d1") }
            loop.perform(inModes: [other]) { log.append("o2") }
            loop.perform(inModes: [.default, other]) { log.append("both") }
            loop.run(mode: .default, timeout: .zero)
            log.append("|")
            loop.run(mode: other, timeout: .zero)
            return log.text
        }
        #expect(trace == "d1 both | o1 o2")
    }

    @Test func blocksPastTheQueuesSlotsKeepOneOrderWithThoseOfOtherModes() {
        // More blocks than the queue's slots (64), a third of them for another mode: those are put back each
        // time and must stay ahead of blocks performed later, whichever part of the queue held them.
        let total = 3 * 64 + 7
        let (first, second) = onThread { () -> ([Int], [Int]) in
            let loop = Loop.current
            let other: Loop.Mode = "other"
            loop.add(LoopSource {}, forMode: .default)
            loop.add(LoopSource {}, forMode: other)
            let ran = Shared<[Int]>([])
            for index in 0..<total {
                loop.perform(inMode: index % 3 == 0 ? other : .default) {
                    ran.value.append(index)
                    // Queued during the pass, so behind the blocks the pass puts back.
                    if index == 1 { loop.perform(inMode: other) { ran.value.append(1_000) } }
                }
            }
            loop.run(mode: .default, timeout: .zero)
            let first = ran.value
            ran.value = []
            for index in total..<(total + 10) { loop.perform(inMode: other) { ran.value.append(index) } }
            loop.run(mode: other, timeout: .zero)
            return (first, ran.value)
        }
        #expect(first == (0..<total).filter { $0 % 3 != 0 })
        #expect(second == (0..<total).filter { $0 % 3 == 0 } + [1_000] + Array(total..<(total + 10)))
    }

    @Test func blocksPendingWhenTheLoopsThreadExitsAreReleasedNotRun() {
        // Some in the queue's slots, the rest in its overflow: every captured object is released.
        let released = AtomicCounter(0)
        let ran = AtomicCounter(0)
        onThread {
            let loop = Loop.current
            for _ in 0..<100 {
                let token = DeinitCounter(released)
                loop.perform { withExtendedLifetime(token) { ran.add() } }
            }
        }
        #expect(ran.value == 0)
        #expect(released.value == 100)
    }

    @Test func aSleepingLoopsStatisticsCountTheWorkBeforeItsSleep() {
        // The counters are published as the loop goes to sleep, not only when it wakes again: a thread reading
        // them while the loop sleeps sees every block it ran.
        let background = BackgroundLoop()
        defer { background.stop() }
        let loop = background.loop
        #expect(eventually { loop.isWaiting })
        let before = loop.statistics
        // Under a lock, so that seeing 3 also means seeing the loop's end of the sleep before them.
        let ran = Shared(0)
        for _ in 0..<3 { loop.perform { ran.mutate { $0 += 1 } } }
        #expect(eventually { ran.value == 3 && loop.isWaiting })
        let after = loop.statistics
        #expect(after.blocksRun - before.blocksRun == 3)
        #expect(after.sleeps > before.sleeps)
    }

    @Test func theCommonTokenIsResolvedWhenTheBlockRuns() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let ui: Loop.Mode = "ui"
            loop.add(LoopSource {}, forMode: ui)
            loop.perform { log.append("common") }          // default: the common token
            loop.run(mode: ui, timeout: .zero)             // ui is not common yet
            log.append("|")
            loop.addCommonMode(ui)
            loop.run(mode: ui, timeout: .zero)
            return log.text
        }
        #expect(trace == "| common")
    }

    @Test func performingFromAnotherThreadWakesTheLoop() {
        let background = BackgroundLoop(turn: .seconds(3600))   // no run's end wakes the loop instead
        defer { background.stop() }
        #expect(eventually { background.loop.isWaiting })
        let ranOn = Shared<Bool?>(nil)
        let loop = background.loop
        loop.perform { ranOn.value = Loop.current === loop }
        #expect(eventually { ranOn.value != nil })
        #expect(ranOn.value == true)
    }

    @Test func manyWakeUpsCollapseIntoOne() {
        let background = BackgroundLoop()
        defer { background.stop() }
        #expect(eventually { background.loop.isWaiting })
        let before = background.loop.statistics.sleeps
        // Rapid wake-ups while the loop is between sleeps are coalesced: far fewer iterations than calls.
        for _ in 0..<10_000 { background.loop.wakeUp() }
        #expect(eventually { background.loop.statistics.sleeps > before && background.loop.isWaiting })
        let woke = background.loop.statistics.sleeps - before
        #expect(woke >= 1 && woke < 10_000)
    }

    @Test func aBlockKeepsANeverUsedModeAlive() {
        // Regression (benchmark finding): a fresh loop's first run must see a block performed for its mode.
        let (trace, result) = onThread { () -> (String, Loop.RunResult) in
            let loop = Loop.current
            let log = TraceLog()
            loop.perform { log.append("B1") }
            loop.perform(inMode: "fresh") { log.append("B2") }
            let first = loop.run(mode: .default, timeout: .seconds(1))
            log.append("\(first)")
            let second = loop.run(mode: "fresh", timeout: .seconds(1))
            return (log.text, second)
        }
        #expect(trace == "B1 finished B2")
        #expect(result == .finished)
    }
}

/// Counts its deinit, so a test can tell that a queue released what it held.
private final class DeinitCounter: Sendable {
    let counter: AtomicCounter
    init(_ counter: AtomicCounter) { self.counter = counter }
    deinit { counter.add() }
}
