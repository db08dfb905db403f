import MetricsTestKit
import NIOCore
import NIOPosix
import RunLoopCore
import RunLoopMetrics
import RunLoopNIO
import Testing
import TestSupport

/// A NIO group made with metrics in one line: each event loop has its own series, named by its thread, with its
/// ticks as iterations, its lateness probe's delays and its stalls.
@Suite(.serialized)
struct MetricsTests {
    @Test func aGroupMadeWithMetricsExportsEachLoopsTicksDelaysAndStalls() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        Loop.stallThreshold = .milliseconds(100)
        defer { Loop.stallThreshold = nil }
        let saved = LoopMetrics.updateInterval
        LoopMetrics.updateInterval = .milliseconds(50)
        defer { LoopMetrics.updateInterval = saved }
        let factory = TestMetrics()
        let (group, metrics) = NIOLoopTracing.makeEventLoopGroup(numberOfThreads: 2, metrics: factory)
        defer {
            try? group.syncShutdownGracefully()
            metrics.detach()
        }
        let probe = NIOLoopTracing.startLatenessProbe(on: group, every: .milliseconds(5))
        defer { probe.stop() }
        let loops = Array(group.makeIterator())
        // One stall on the first loop: a task that holds its tick far past the threshold.
        _ = try loops[0].submit { usleep(150_000) }.wait()
        for _ in 0..<20 { for loop in loops { try loop.submit {}.wait() } }

        let delays = { factory.timers(label: LoopMetrics.Name.wakeUpDelay) }
        #expect(eventually { delays().count == 2 && delays().allSatisfy { $0.values.count >= 3 } }, "each loop's lateness probe ran")
        let iterations = { factory.counters(label: LoopMetrics.Name.iterations) }
        #expect(eventually { iterations().count == 2 && iterations().allSatisfy { $0.totalValue >= 20 } },
                "every loop ticked at least once per task: \(iterations().map(\.totalValue))")
        let names = Set(delays().compactMap { timer in timer.dimensions.first { $0.0 == "runloop.name" }?.1 })
        #expect(names.count == 2 && names.allSatisfy { $0.hasPrefix("NIO-ELT-") }, "one series per loop, named by its thread: \(names)")
        #expect(factory.counterTotal(label: LoopMetrics.Name.stalls) == 1, "the one 150 ms task")
        let utilization = factory.meters(label: LoopMetrics.Name.utilization).compactMap(\.lastValue)
        #expect(utilization.count == 2 && utilization.allSatisfy { $0 >= 0 && $0 <= 1 }, "\(utilization)")

        metrics.detach()
        #expect(factory.counters(label: LoopMetrics.Name.iterations).isEmpty, "detached: the series ended")
    }
}
