import Testing
import TraceModel
@testable import KernelTracing

/// The hand-out order of the recorder's events, without a kernel: held back within the reorder window, sorted,
/// clamped when late, and each task named once before its first mention.
@Suite struct KernelEventOrderingTests {
    private func offCPU(_ tid: Int32, back: UInt64, culprit: Int32? = nil) -> KernelEventGroup {
        var events: [TraceEvent] = []
        var mentions: [KernelTaskName] = []
        if let culprit {
            mentions.append(KernelTaskName(threadID: culprit, processID: culprit, command: "hog"))
            events.append(TraceEvent(timestamp: back, threadID: tid, processID: 1, payload: .kernelRunQueue(
                .init(threadID: tid, cpu: 0, others: 0, culprits: [.init(threadID: culprit, nanoseconds: 10)]))))
        }
        events.append(TraceEvent(timestamp: back, threadID: tid, processID: 1, payload: .kernelOffCPU(
            .init(threadID: tid, reason: .preempted, syscall: -1, left: back - 10, woken: back - 10, back: back, cpu: 0,
                  wakerThreadID: -1, throttled: 0))))
        return KernelEventGroup(timestamp: back, mentions: mentions, events: events)
    }

    @Test func holdsBackTheReorderWindowSortsAndNamesOnce() {
        var ordering = KernelEventOrdering(reorderWindow: 2_000)
        ordering.add(offCPU(7, back: 5_000, culprit: 9))
        ordering.add(offCPU(8, back: 3_000, culprit: 9))
        ordering.add(offCPU(7, back: 9_500))
        let first = ordering.release(now: 10_000, final: false)
        // 9_500 is within 2 µs of now: held. 3_000 comes first, with the hog named before it, once.
        #expect(first.map(\.timestamp) == [3_000, 3_000, 3_000, 5_000, 5_000])
        #expect(first.map(\.payload.eventName) == ["kernel_task", "kernel_run_queue", "kernel_off_cpu", "kernel_run_queue", "kernel_off_cpu"])
        #expect(first[0].threadID == 9)
        // A record older than what was handed out is stamped with the last time handed out; its fields keep theirs.
        ordering.add(offCPU(8, back: 4_000))
        let second = ordering.release(now: 20_000, final: false)
        #expect(second.map(\.timestamp) == [5_000, 9_500])
        if case .kernelOffCPU(let off) = second[0].payload { #expect(off.back == 4_000) } else { Issue.record("not off_cpu") }
        #expect(ordering.release(now: 20_000, final: true).isEmpty)
    }

    @Test func finalReleaseHandsOutEverything() {
        var ordering = KernelEventOrdering(reorderWindow: 2_000_000)
        ordering.add(offCPU(7, back: 100))
        #expect(ordering.release(now: 1_000, final: false).isEmpty)
        #expect(ordering.release(now: 1_000, final: true).map(\.timestamp) == [100])
    }
}
