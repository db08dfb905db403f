import Testing
import TraceModel
@testable import KernelTracing

/// The kernel recorder's wait calls as the events an interposer's recording holds, thread by thread.
struct KernelWaitThreadsTests {
    static func wait(_ tid: Int32, _ from: UInt64, _ to: UInt64, name: String = "server", lostBefore: UInt32 = 0) -> KernelWait {
        KernelWait(threadID: tid, processID: 100, threadName: name,
                   wait: .init(call: .epollPwait, target: 4, setSize: 64, timeout: -1, begin: from, end: to, ready: 1, error: 0),
                   lostBefore: lostBefore)
    }

    static let process = KernelWaitThreads.Process(parent: 1, name: "server")

    @Test func eachThreadIsNamedBeforeItsFirstWaitAndItsWaitsAreOneBatch() {
        var threads = KernelWaitThreads { pid in pid == 100 ? Self.process : nil }
        let parts = threads.events(for: [Self.wait(100, 10, 20), Self.wait(101, 12, 30, name: "worker"), Self.wait(100, 25, 40)])
        #expect(parts.map(\.threadID) == [100, 101])
        #expect(parts[0].events.map(\.payload) == [
            .waitThread(pid: 100, ppid: 1, thread: "server", process: "server"),
            .waitBatch(.init(threadID: 100, waits: [Self.wait(100, 10, 20).wait, Self.wait(100, 25, 40).wait])),
        ])
        #expect(parts[0].events.map(\.timestamp) == [10, 40], "named at its first wait's begin, the batch at its last wait's end")
        #expect(parts[1].events.first?.payload == .waitThread(pid: 100, ppid: 1, thread: "worker", process: "server"))
        // Named once: the next batch of the same thread has its waits alone.
        let next = threads.events(for: [Self.wait(101, 35, 50, name: "worker")])
        #expect(next.count == 1 && next[0].events.count == 1)
    }

    /// Names follow renames (a thread pool that names its workers after they start), as the interposer's do.
    @Test func aRenamedThreadIsNamedAgainBeforeItsNextWait() {
        var threads = KernelWaitThreads { _ in Self.process }
        let parts = threads.events(for: [Self.wait(101, 10, 20, name: "server"), Self.wait(101, 25, 30, name: "mc-worker")])
        #expect(parts.count == 1)
        #expect(parts[0].events.map(\.payload) == [
            .waitThread(pid: 100, ppid: 1, thread: "server", process: "server"),
            .waitBatch(.init(threadID: 101, waits: [Self.wait(101, 10, 20).wait])),
            .waitThread(pid: 100, ppid: 1, thread: "mc-worker", process: "server"),
            .waitBatch(.init(threadID: 101, waits: [Self.wait(101, 25, 30).wait])),
        ])
    }

    /// Waits lost between two of a thread's waits split its batch there: the writer makes the loss a window on the
    /// thread's stream between the two parts, so the analysis breaks the loop's chain exactly there.
    @Test func waitsLostInTheMiddleOfABatchSplitIt() {
        var threads = KernelWaitThreads { _ in Self.process }
        let parts = threads.events(for: [Self.wait(100, 10, 20), Self.wait(100, 60, 70, lostBefore: 3), Self.wait(100, 75, 80)])
        #expect(parts.map(\.lostBefore) == [0, 3])
        #expect(parts[0].events.last?.payload == .waitBatch(.init(threadID: 100, waits: [Self.wait(100, 10, 20).wait])))
        #expect(parts[1].events.map(\.payload) == [.waitBatch(.init(threadID: 100, waits: [Self.wait(100, 60, 70).wait, Self.wait(100, 75, 80).wait]))])
    }

    /// A thread that was outside its waits when its process was attached to: its first wait comes after a marker at
    /// the attach, so the analysis counts that first iteration from there; a thread waiting then (its first wait
    /// began before) or made after gets none.
    @Test func aThreadOutsideItsWaitsAtTheAttachGetsAMarkerThere() {
        var threads = KernelWaitThreads { _ in Self.process }
        threads.followed(threads: [100, 101], at: 5)
        var inProgress = Self.wait(101, 0, 12)
        inProgress.wait.begin = .max
        let parts = threads.events(for: [Self.wait(100, 10, 20), inProgress, Self.wait(102, 14, 16)])
        #expect(parts[0].events.map(\.timestamp) == [5, 20], "named at the attach")
        #expect(parts[0].events.last?.payload == .waitBatch(.init(threadID: 100, waits: [
            .outsideWaits(at: 5, call: .epollPwait, target: 4), Self.wait(100, 10, 20).wait,
        ])))
        #expect(parts[1].events.last?.payload == .waitBatch(.init(threadID: 101, waits: [inProgress.wait])))
        #expect(parts[2].events.last?.payload == .waitBatch(.init(threadID: 102, waits: [Self.wait(102, 14, 16).wait])))
        // Once only.
        let next = threads.events(for: [Self.wait(100, 30, 40)])
        #expect(next[0].events.map(\.payload) == [.waitBatch(.init(threadID: 100, waits: [Self.wait(100, 30, 40).wait]))])
    }

    /// A process gone before its name was read is named by its main thread's name; another thread's by its pid.
    @Test func aProcessGoneBeforeItWasLookedUpIsStillNamed() {
        var threads = KernelWaitThreads { _ in nil }
        let parts = threads.events(for: [Self.wait(100, 10, 20, name: "main"), Self.wait(100, 30, 40)])
        #expect(parts[0].events.first?.payload == .waitThread(pid: 100, ppid: 0, thread: "main", process: "main"))
    }
}
