import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// The fake kernel itself: how a test drives time, wake-ups and descriptor readiness on a loop.
@Suite struct VirtualKernelTests {
    @Test func theClockMovesOnlyWhenAdvancedAndNeverBack() {
        let kernel = VirtualKernel(start: Loop.Instant(nanoseconds: 5_000))
        #expect(kernel.now == Loop.Instant(nanoseconds: 5_000))
        usleep(1_000)
        #expect(kernel.now == Loop.Instant(nanoseconds: 5_000))
        kernel.advanceTime(by: .microseconds(3))
        #expect(kernel.now == Loop.Instant(nanoseconds: 8_000))
        kernel.advanceTime(to: Loop.Instant(nanoseconds: 7_000))
        #expect(kernel.now == Loop.Instant(nanoseconds: 8_000))
        kernel.advanceTime(to: Loop.Instant(nanoseconds: 20_000))
        #expect(kernel.now == Loop.Instant(nanoseconds: 20_000))
    }

    @Test func aRunOfAnHourCompletesAtOnceInVirtualTime() {
        let (result, elapsed, sleeps) = onVirtualLoop { kernel, loop -> (Loop.RunResult, Duration, Int) in
            let start = kernel.now
            loop.add(LoopSource {}, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(3600))
            return (result, kernel.elapsed(since: start), kernel.sleeps.count)
        }
        #expect(result == .timedOut)
        #expect(elapsed == .seconds(3600))
        #expect(sleeps == 1)
    }

    @Test func withoutAutoAdvanceTheLoopSleepsUntilTheTestAdvancesTime() {
        let kernel = VirtualKernel(autoAdvance: false)
        let start = kernel.now
        let background = BackgroundLoop(kernel: kernel)
        defer { background.stop() }
        let fired = Shared<[Duration]>([])
        background.loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10)), interval: .milliseconds(10)) { _ in
            fired.value.append(kernel.elapsed(since: start))
        }, forMode: .default)
        #expect(eventually { background.loop.isWaiting && kernel.armedDate == start.advanced(by: .milliseconds(10)) })
        kernel.advanceTime(by: .milliseconds(9))
        #expect(fired.value.isEmpty)
        #expect(background.loop.isWaiting)
        kernel.advanceTime(by: .milliseconds(1))
        #expect(eventually { fired.value == [.milliseconds(10)] })
        #expect(eventually { kernel.armedDate == start.advanced(by: .milliseconds(20)) })
        // Jumping over the slots at 20 and 30 ms fires once, late, and the grid goes on at 40 ms.
        kernel.advanceTime(to: start.advanced(by: .milliseconds(35)))
        #expect(eventually { fired.value.count == 2 })
        #expect(fired.value == [.milliseconds(10), .milliseconds(35)])
        #expect(eventually { kernel.armedDate == start.advanced(by: .milliseconds(40)) })
    }

    @Test func aBlockPerformedFromAnotherThreadWakesAVirtualLoopWithoutMovingTheClock() {
        let kernel = VirtualKernel(autoAdvance: false)
        let start = kernel.now
        let background = BackgroundLoop(kernel: kernel)
        defer { background.stop() }
        #expect(eventually { background.loop.isWaiting })
        let ranAt = Shared<Duration?>(nil)
        background.loop.perform { ranAt.value = kernel.elapsed(since: start) }
        #expect(eventually { ranAt.value != nil })
        #expect(ranAt.value == .zero)
        #expect(background.loop.statistics.wakeUps(.timer) == 0)
    }

    @Test func descriptorReadinessIsDeliveredInOrderWithoutSleeping() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        var other: [Int32] = [0, 0]
        try #require(pipe(&other) == 0)
        defer { for fd in fds + other { close(fd) } }
        let (readFD, otherFD) = (fds[0], other[0])
        let (trace, elapsed) = onVirtualLoop { kernel, loop -> (String, Duration) in
            let start = kernel.now
            let log = TraceLog()
            let second = DescriptorSource(fileDescriptor: readFD, order: 2) { _, events in
                log.append("second:\(events == .readable)")
                kernel.setReadiness([], of: readFD)
            }
            let first = DescriptorSource(fileDescriptor: otherFD, order: 1) { _, events in
                log.append("first:\(events == .readable)")
                kernel.setReadiness([], of: otherFD)
            }
            loop.add(second, forMode: .default)
            loop.add(first, forMode: .default)
            kernel.setReadiness(.readable, of: readFD)
            kernel.setReadiness(.readable, of: otherFD)
            let result = loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
            log.append("\(result)")
            // Level-triggered: the one not handled is reported again by the next run.
            let again = loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
            log.append("\(again)")
            return (log.text, kernel.elapsed(since: start))
        }
        #expect(trace == "first:true handled_source second:true handled_source")
        #expect(elapsed == .zero)
    }

    @Test func aHangUpIsReportedWhateverTheInterest() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { close(fd) } }
        let writeFD = fds[1]
        let events = onVirtualLoop { kernel, loop -> DescriptorSource.Events? in
            let seen = Shared<DescriptorSource.Events?>(nil)
            let source = DescriptorSource(fileDescriptor: writeFD, events: .writable) { source, events in
                seen.value = events
                source.invalidate()
            }
            loop.add(source, forMode: .default)
            kernel.setReadiness([.readable, .hangUp], of: writeFD)
            loop.run(mode: .default, timeout: .seconds(1))
            return seen.value
        }
        // Readable was not asked for; the hang-up is reported anyway, as epoll does.
        #expect(events == .hangUp)
    }

    @Test func aReadyDescriptorInAnotherModeDoesNotWakeTheLoop() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { close(fd) } }
        let readFD = fds[0]
        let (handled, result, elapsed) = onVirtualLoop { kernel, loop -> (Bool, Loop.RunResult, Duration) in
            let start = kernel.now
            let handled = Shared(false)
            loop.add(DescriptorSource(fileDescriptor: readFD) { _, _ in handled.value = true }, forMode: "other")
            loop.add(LoopSource {}, forMode: .default)
            kernel.setReadiness(.readable, of: readFD)
            let result = loop.run(mode: .default, timeout: .milliseconds(25))
            return (handled.value, result, kernel.elapsed(since: start))
        }
        #expect(!handled)
        #expect(result == .timedOut)
        #expect(elapsed == .milliseconds(25))
    }
}
