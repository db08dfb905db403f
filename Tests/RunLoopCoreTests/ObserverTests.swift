import Glibc
import RunLoopCore
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
}
