import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rulebook §2: modes, the common-modes token, empty modes.
@Suite struct ModeTests {
    @Test func emptyNeverCreatedAndCommonTokenModesFinishAtOnceWithoutObservers() {
        let results = onThread { () -> [String] in
            let loop = Loop.current
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(traceObserver(log), forMode: .common)
            var results: [String] = []
            results.append("\(loop.run(mode: .default, timeout: .seconds(1)))")      // observers only: empty
            results.append("\(loop.run(mode: "never-used", timeout: .seconds(1)))")
            loop.add(LoopSource {}, forMode: .default)
            results.append("\(loop.run(mode: .common, timeout: .seconds(1)))")       // the token is not a mode
            results.append(log.text)
            return results
        }
        #expect(results == ["finished", "finished", "finished", ""])
    }

    @Test func runningTheCommonTokenCreatesNoMode() {
        let fires = onThread { () -> Int in
            let loop = Loop.current
            let count = Shared(0)
            loop.add(LoopTimer(after: .zero) { _ in count.value += 1 }, forMode: .common)
            loop.run(mode: .common, timeout: .milliseconds(50))
            loop.run(mode: .default, timeout: .milliseconds(50))
            return count.value
        }
        #expect(fires == 1)
    }

    @Test func onlyTheRunningModesItemsFire() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let other: Loop.Mode = "other"
            loop.add(LoopTimer(after: .zero) { _ in log.append("default") }, forMode: .default)
            loop.add(LoopTimer(after: .zero) { _ in log.append("other") }, forMode: other)
            loop.run(mode: other, timeout: .milliseconds(50))
            loop.run(mode: .default, timeout: .milliseconds(50))
            return log.text
        }
        #expect(trace == "other default")
    }

    @Test func currentModeIsTheInnermostRunningMode() {
        let modes = onThread { () -> [String] in
            let loop = Loop.current
            let seen = Shared<[String]>([])
            let inner: Loop.Mode = "inner"
            loop.add(LoopSource {}, forMode: inner)
            loop.add(LoopTimer(after: .zero) { _ in
                seen.value.append(loop.currentMode?.name ?? "nil")
                loop.perform(inModes: [inner]) { seen.value.append(loop.currentMode?.name ?? "nil") }
                loop.run(mode: inner, timeout: .zero)
                seen.value.append(loop.currentMode?.name ?? "nil")
            }, forMode: .default)
            seen.value.append(loop.currentMode?.name ?? "nil")
            loop.run(mode: .default, timeout: .milliseconds(50))
            seen.value.append(loop.currentMode?.name ?? "nil")
            return seen.value
        }
        #expect(modes == ["nil", Loop.Mode.default.name, "inner", Loop.Mode.default.name, "nil"])
    }

    @Test func commonItemsJoinModesMadeCommonBeforeAndAfter() {
        let result = onThread { () -> [String] in
            let loop = Loop.current
            let before: Loop.Mode = "before"
            let after: Loop.Mode = "after"
            let log = TraceLog()
            loop.addCommonMode(before)
            let timer = LoopTimer(after: .zero, interval: .milliseconds(1)) { _ in log.append("T") }
            loop.add(timer, forMode: .common)
            var out: [String] = []
            out.append("\(loop.contains(timer, inMode: .default)) \(loop.contains(timer, inMode: before)) \(loop.contains(timer, inMode: after)) \(loop.contains(timer, inMode: .common))")
            loop.addCommonMode(after)
            out.append("\(loop.contains(timer, inMode: after))")
            out.append("\(loop.commonModes == [.default, before, after])")
            loop.run(mode: after, timeout: .milliseconds(20), returnAfterSourceHandled: false)
            out.append("\(!log.events.isEmpty)")
            loop.remove(timer, forMode: .common)
            out.append("\(loop.contains(timer, inMode: .default)) \(loop.contains(timer, inMode: before)) \(loop.contains(timer, inMode: after)) \(loop.contains(timer, inMode: .common))")
            out.append("\(timer.isValid)")
            return out
        }
        #expect(result == ["true true false true", "true", "true", "true", "false false false false", "true"])
    }

    @Test func removingFromOneModeKeepsTheOthers() {
        let result = onThread { () -> [Bool] in
            let loop = Loop.current
            let source = LoopSource {}
            loop.add(source, forMode: .default)
            loop.add(source, forMode: "b")
            loop.remove(source, forMode: .default)
            return [loop.contains(source, inMode: .default), loop.contains(source, inMode: "b")]
        }
        #expect(result == [false, true])
    }

    @Test func aModeThatBecomesEmptyFinishesInsteadOfSleepingUntilTheTimeout() {
        let (trace, result, elapsed, sleeps) = onVirtualLoop { kernel, loop -> (String, Loop.RunResult, Duration, Int) in
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            let source = LoopSource { log.append("S1") }
            loop.add(source, forMode: .default)
            loop.perform(inModes: [.default]) {
                log.append("B1")
                source.invalidate()
            }
            let start = kernel.now
            let result = loop.run(mode: .default, timeout: .seconds(5))
            return (log.text, result, kernel.elapsed(since: start), kernel.sleeps.count)
        }
        #expect(trace == "Entry BT BS B1 Exit")
        #expect(result == .finished)
        #expect(elapsed == .zero)
        #expect(sleeps == 0)
    }

    @Test func aPendingBlockKeepsItsModeAlive() {
        let (trace, result) = onThread { () -> (String, Loop.RunResult) in
            let loop = Loop.current
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: "blocks-only")
            loop.perform(inModes: ["blocks-only"]) { log.append("B1") }
            let result = loop.run(mode: "blocks-only", timeout: .seconds(1))
            return (log.text, result)
        }
        #expect(trace == "Entry BT BS B1 Exit")
        #expect(result == .finished)
    }
}
