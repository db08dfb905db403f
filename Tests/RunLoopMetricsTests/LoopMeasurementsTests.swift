import Glibc
@_spi(VirtualTime) @testable import RunLoopCore
import Testing
import TestSupport

/// What a loop measures of itself for the metrics (RunLoopCore's LoopMeasurements), exactly, in virtual time: each
/// timer's lateness, each signalled source's delay, the time asleep and the stalls, with no sink installed.
@Suite(.serialized) struct LoopMeasurementsTests {
    static let ms: UInt64 = 1_000_000

    struct Measured: Sendable {
        var delays: [(delay: UInt64, timer: Bool)]
        var slept: UInt64
        var stalls: UInt64
        var sleptVirtually: UInt64
    }

    /// A virtual loop measured from its first run: timer A due at 10 ms works 3 ms, so timer B due at 11 ms fires
    /// 2 ms late; timer C at 50 ms works 60 ms past a 50 ms threshold (one stall); a source signalled from A runs
    /// right after the pass (its delay is real time, not virtual: signals are stamped on the monotonic clock).
    static func measureOnAVirtualLoop() -> Measured {
        onThread {
            let kernel = VirtualKernel(autoAdvance: true)
            let loop = Loop.makeCurrent(on: kernel)
            let measurements = LoopMeasurements(halfFull: {}, overflow: { _, _ in Issue.record("the ring overflowed") })
            loop.measure(into: measurements)
            let start = kernel.now
            let source = LoopSource(label: "signalled") {}
            loop.add(source, forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10)), label: "A") { _ in
                kernel.advanceTime(by: .milliseconds(3))
                _ = source.signal()
            }, forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(11)), label: "B") { _ in }, forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(50)), label: "C") { _ in
                kernel.advanceTime(by: .milliseconds(60))
            }, forMode: .default)
            _ = loop.run(mode: .default, timeout: .milliseconds(200))
            var delays: [(UInt64, Bool)] = []
            measurements.drainDelays { delays.append(($0, $1)) }
            let sleptVirtually = kernel.sleeps.reduce(UInt64(0)) { $0 + UInt64($1.from.duration(to: $1.until).nanosecondsClamped) }
            loop.measure(into: nil)
            return Measured(delays: delays, slept: measurements.slept, stalls: measurements.stalls, sleptVirtually: sleptVirtually)
        }
    }

    @Test func aVirtualLoopsLatenessSleepsAndStallsAreExact() {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        Loop.stallThreshold = .milliseconds(50)
        defer { Loop.stallThreshold = nil }
        let measured = Self.measureOnAVirtualLoop()
        let timers = measured.delays.filter(\.timer).map(\.delay)
        #expect(timers == [0, 2 * Self.ms, 0], "A on time, B 2 ms late, C on time: \(timers)")
        let signalled = measured.delays.filter { !$0.timer }
        #expect(signalled.count == 1, "the source's one perform")
        #expect(measured.stalls == 1, "C's 60 ms")
        // Asleep: 0–10 ms, 13–50 ms (B ran at once) and 110–200 ms, as the virtual kernel slept.
        #expect(measured.slept == 137 * Self.ms && measured.slept == measured.sleptVirtually, "\(measured.slept)")
    }

    /// Without measurements the loop measures nothing: a loop given none and then some counts only from then on.
    @Test func measurementsStartAtTheNextIterationAndStopWhenTakenAway() {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let counts: (before: Int, during: Int, after: Int) = onThread {
            let kernel = VirtualKernel(autoAdvance: true)
            let loop = Loop.makeCurrent(on: kernel)
            let measurements = LoopMeasurements(halfFull: {}, overflow: { _, _ in })
            let fired = Shared(0)
            loop.add(LoopTimer(fireAt: kernel.now.advanced(by: .milliseconds(1)), interval: .milliseconds(1)) { _ in
                let count = fired.mutate { value -> Int in
                    value += 1
                    return value
                }
                if count == 3 { loop.measure(into: measurements) }
                if count == 8 { loop.measure(into: nil) }
            }, forMode: .default)
            _ = loop.run(mode: .default, timeout: .milliseconds(12))
            var count = 0
            measurements.drainDelays { _, _ in count += 1 }
            // Timers 4 to 8 were measured (given during the 3rd, taken away during the 8th: each from the next
            // iteration on).
            return (3, count, fired.value - 8)
        }
        #expect(counts.during == 5, "timers 4…8 measured: \(counts.during)")
        #expect(counts.after > 0)
    }
}
