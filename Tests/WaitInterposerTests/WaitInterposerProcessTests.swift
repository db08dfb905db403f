import Foundation
import Glibc
import TestSupport
import Testing
import TraceModel
import TraceReading

/// What processes do to a recording: descriptors closed under it, fork, exec, clearenv, SIGKILL.
@Suite struct WaitInterposerProcessTests {
    @Test func closingEveryDescriptorAndDup2OverThemLeavesTheTraceComplete() throws {
        let run = try runInterposed(["close"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        let eps = run.epollDescriptors(thread: run.pid)
        try #require(eps.count == 4)
        #expect(run.payloads(thread: run.pid) == [announcement(pid: run.pid, ppid: getpid())]
                + idleEpollWaits(3, ep: eps[0], milliseconds: 1) + idleEpollWaits(1, ep: eps[1], milliseconds: 1)
                + idleEpollWaits(4, ep: eps[2], milliseconds: 1) + idleEpollWaits(2, ep: eps[3], milliseconds: 1))
        let end = try #require(run.marker(".proc-\(run.pid).end"))
        #expect(end["write_errors"] == "0")
        #expect(end["events_recorded"] == "21")
        #expect(end["reason"] == "exit")
        #expect(run.health.recordingCutOff == false)
    }

    @Test func aForkedChildIsNotRecordedWithoutFollow() throws {
        let run = try runInterposed(["fork"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        let child = try #require(run.values("child").first)
        let eps = run.epollDescriptors(thread: run.pid)
        try #require(eps.count == 2)
        #expect(run.payloads(thread: run.pid) == [announcement(pid: run.pid, ppid: getpid())]
                + idleEpollWaits(2, ep: eps[0], milliseconds: 1) + idleEpollWaits(2, ep: eps[1], milliseconds: 1))
        #expect(run.events.allSatisfy { $0.threadID == run.pid })
        #expect(run.files == [".proc-\(run.pid).start", ".proc-\(run.pid).waited", ".proc-\(run.pid).end", "stream-\(run.pid)-\(run.pid)"])
        #expect(!run.files.contains { $0.contains("\(child)") })
        // What rlctl points to --follow-children by.
        #expect(run.marker(".proc-\(run.pid).end")?["children"] == "1")
    }

    @Test func aForkedChildIsRecordedIntoItsOwnStreamsWithFollow() throws {
        let run = try runInterposed(["fork"], follow: true)
        // The child's copy of the parent's unwritten events is not written again: only its own waits.
        let child = try expectParentAndChildWaits(run, parentWaitsAfterChild: 2)
        #expect(run.files == [".proc-\(run.pid).start", ".proc-\(run.pid).waited", ".proc-\(run.pid).end", "stream-\(run.pid)-\(run.pid)",
                              ".proc-\(child).start", ".proc-\(child).waited", ".proc-\(child).end", "stream-\(child)-\(child)"])
        #expect(run.marker(".proc-\(child).start")?["ppid"] == "\(run.pid)")
        #expect(run.health.recordingCutOff == false)
    }

    @Test(arguments: ["forkexec", "clearenv"])
    func anExecutedChildIsFollowedEvenWhenItsEnvironmentWasCleared(mode: String) throws {
        let run = try runInterposed([mode], follow: true)
        let child = try expectParentAndChildWaits(run, parentWaitsAfterChild: 1)
        // The child never waited before exec: it started no recording of its own until its new image did.
        #expect(run.files.filter { $0.contains("\(child)") }
                == Set([".proc-\(child).start", ".proc-\(child).waited", ".proc-\(child).end", "stream-\(child)-\(child)"]))
        let start = try #require(run.marker(".proc-\(child).start"))
        #expect(start["exe"] == (try WaitsProgram.path.get()))
        #expect(start["comm"] == "waits")
        #expect(run.marker(".proc-\(child).end")?["reason"] == "exit")
    }

    @Test func anExecOfItselfWithoutFollowRecordsBothImages() throws {
        let run = try runInterposed(["execself"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        #expect(run.values("pid") == [run.pid, run.pid])
        let eps = run.epollDescriptors(thread: run.pid)
        try #require(eps.count == 2)
        let intro = announcement(pid: run.pid, ppid: getpid())
        #expect(run.payloads(thread: run.pid) == [intro] + idleEpollWaits(2, ep: eps[0], milliseconds: 1)
                + [intro] + idleEpollWaits(3, ep: eps[1], milliseconds: 2))
        #expect(run.marker(".proc-\(run.pid).end")?["reason"] == "exec")
        #expect(run.marker(".proc-\(run.pid).1.start")?["pid"] == "\(run.pid)")
        #expect(run.marker(".proc-\(run.pid).1.end")?["reason"] == "exit")
        #expect(run.files.filter { $0.hasPrefix("stream-") } == Set(["stream-\(run.pid)-\(run.pid)", "stream-\(run.pid).1-\(run.pid)"]))
    }

    @Test func aFailedExecRecordsOnIntoANewRecording() throws {
        let run = try runInterposed(["badexec"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        let eps = run.epollDescriptors(thread: run.pid)
        try #require(eps.count == 2)
        let intro = announcement(pid: run.pid, ppid: getpid())
        #expect(run.payloads(thread: run.pid) == [intro] + idleEpollWaits(2, ep: eps[0], milliseconds: 1)
                + [intro] + idleEpollWaits(1, ep: eps[1], milliseconds: 1))
        #expect(run.marker(".proc-\(run.pid).end")?["reason"] == "exec")
        #expect(run.marker(".proc-\(run.pid).1.end")?["reason"] == "exit")
    }

    @Test func waitsBeforeASIGKILLAreReadableAndTheTraceIsCutOff() throws {
        let run = try runInterposed(["kill"])
        #expect(run.output.termination == .signaled(SIGKILL))
        let ep = try #require(run.epollDescriptors(thread: run.pid).first)
        // The packet closed by the 100 ms switch interval, written by the writer before the kill; the sixth
        // wait's events were in the packet still open.
        #expect(run.payloads(thread: run.pid) == [announcement(pid: run.pid, ppid: getpid())]
                + idleEpollWaits(5, ep: ep, milliseconds: 1))
        #expect(run.marker(".proc-\(run.pid).start") != nil)
        #expect(run.marker(".proc-\(run.pid).end") == nil)
        #expect(run.health.recordingCutOff)
    }

    /// The follow-mode programs: the parent waits twice (1 ms), its child three times (2 ms, on its own
    /// thread), then the parent `parentWaitsAfterChild` times on a new descriptor. Returns the child's pid.
    private func expectParentAndChildWaits(_ run: InterposedRun, parentWaitsAfterChild: Int,
                                           sourceLocation: SourceLocation = #_sourceLocation) throws -> Int32 {
        #expect(run.output.status == 0, "\(run.output.stderr)", sourceLocation: sourceLocation)
        let child = try #require(run.values("child").first, sourceLocation: sourceLocation)
        let parentEps = run.epollDescriptors(thread: run.pid)
        let childEp = try #require(run.epollDescriptors(thread: child).first, sourceLocation: sourceLocation)
        try #require(parentEps.count == 2, sourceLocation: sourceLocation)
        #expect(run.payloads(thread: run.pid) == [announcement(pid: run.pid, ppid: getpid())]
                + idleEpollWaits(2, ep: parentEps[0], milliseconds: 1)
                + idleEpollWaits(parentWaitsAfterChild, ep: parentEps[1], milliseconds: 1), sourceLocation: sourceLocation)
        #expect(run.payloads(thread: child) == [announcement(pid: child, ppid: run.pid)]
                + idleEpollWaits(3, ep: childEp, milliseconds: 2), sourceLocation: sourceLocation)
        return child
    }
}
