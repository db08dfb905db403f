import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rulebook §4: observer order, snapshots, one-shot observers, nested runs.
@Suite struct ObserverTests {
    @Test func observersAreCalledByOrderThenInsertion() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            for (name, order) in [("a", 5), ("b", -1), ("c", 5), ("d", 0)] {
                loop.add(LoopObserver(activities: .entry, order: order) { _, _ in log.append(name) }, forMode: .default)
            }
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return log.text
        }
        #expect(trace == "b d a c")
    }

    @Test func aPassWorksOnASnapshot() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let late = LoopObserver(activities: .beforeTimers, order: 10) { _, _ in log.append("late") }
            let victim = LoopObserver(activities: .beforeTimers, order: 5) { _, _ in log.append("victim") }
            loop.add(victim, forMode: .default)
            loop.add(LoopObserver(activities: .beforeTimers, order: 1) { _, _ in
                log.append("first")
                loop.add(late, forMode: .default)   // added during the pass: not called in it
                victim.invalidate()                 // invalidated earlier in the pass: skipped
            }, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            log.append("|")
            loop.run(mode: .default, timeout: .zero)
            return log.text
        }
        #expect(trace == "first | first late")
    }

    @Test func aNonRepeatingObserverIsInvalidatedAfterItsFirstCallout() {
        let (trace, valid) = onThread { () -> (String, Bool) in
            let loop = Loop.current
            let log = TraceLog()
            let once = LoopObserver(activities: [.beforeTimers, .beforeSources], repeats: false) { _, activity in log.append(activity.short) }
            loop.add(once, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            loop.run(mode: .default, timeout: .zero)
            return (log.text, once.isValid)
        }
        #expect(trace == "BT")
        #expect(!valid)
    }

    @Test func anObserverInItsCalloutIsNotCalledByANestedRunItStarts() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let depth = Shared(0)
            loop.add(LoopObserver(activities: .entry) { _, _ in
                log.append("outer-entry")
                depth.value += 1
                if depth.value == 1 { loop.run(mode: .default, timeout: .zero) }
            }, forMode: .default)
            loop.add(LoopObserver(activities: .entry, order: 1) { _, _ in log.append("other") }, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return log.text
        }
        // The nested run calls the second observer but not the first, which is inside its callout.
        #expect(trace == "outer-entry other other")
    }

    @Test func observersOnlySeeTheirActivities() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            loop.add(LoopObserver(activities: [.entry, .exit]) { _, activity in log.append(activity.short) }, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return log.text
        }
        #expect(trace == "Entry Exit")
    }

    @Test func observersSeeIsWaitingFalse() {
        let seen = onThread { () -> [Bool] in
            let loop = Loop.current
            let seen = Shared<[Bool]>([])
            loop.add(LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, _ in seen.value.append(loop.isWaiting) }, forMode: .default)
            loop.add(LoopTimer(after: .milliseconds(5)) { _ in }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return seen.value
        }
        #expect(seen == [false, false])
    }

    @Test func addingAndRemovingObserversLeavesTheModesTimersAndPortsServed() {
        // The mode keeps its observers' activities and whether it holds timers and ports in one word that the
        // steps read without the lock; changing one part must not lose the others.
        let (fires, delivered, trace) = onVirtualLoop { kernel, loop -> ([Duration], [Int32], String) in
            let start = kernel.now
            let fires = Shared<[Duration]>([])
            let delivered = Shared<[Int32]>([])
            let log = TraceLog()
            let removed = LoopTimer(fireAt: start.advanced(by: .milliseconds(5))) { _ in fires.value.append(.zero) }
            loop.add(removed, forMode: .default)
            loop.remove(removed, forMode: .default)
            let port = LoopPort { _, message in delivered.value.append(message.msgid) }
            loop.add(port, forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10))) { _ in
                fires.value.append(kernel.elapsed(since: start))
            }, forMode: .default)
            let passing = LoopObserver(activities: .all) { _, _ in log.append("X") }
            loop.add(passing, forMode: .default)
            loop.add(LoopObserver(activities: .afterWaiting) { _, _ in log.append("AW") }, forMode: .default)
            loop.remove(passing, forMode: .default)
            try? port.send(msgid: 7)
            loop.run(mode: .default, timeout: .milliseconds(50))
            return (fires.value, delivered.value, log.text)
        }
        #expect(fires == [.milliseconds(10)])
        #expect(delivered == [7])
        // The message made the first iteration a poll (no AfterWaiting); the timer's wake-up, and the timeout's, did not.
        #expect(trace == "AW AW")
    }
}
