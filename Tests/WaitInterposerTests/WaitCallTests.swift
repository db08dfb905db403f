import Foundation
import Glibc
import TestSupport
import Testing
import TraceModel
import TraceReading

/// Each wrapped call as the trace shows it: the call, its target, set size and timeout, its result and errno.
@Suite struct WaitCallTests {
    @Test func idleEpollWaitsAreRecordedOneBeginAndEndEach() throws {
        let run = try runInterposed(["epoll", "5", "10"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        let ep = try #require(run.epollDescriptors(thread: run.pid).first)
        #expect(run.payloads(thread: run.pid) == [announcement(pid: run.pid, ppid: getpid())]
                + idleEpollWaits(5, ep: ep, milliseconds: 10))
        let waits = run.waits(thread: run.pid)
        #expect(waits.count == 5)
        for wait in waits {
            // TSC stamps may lead CLOCK_MONOTONIC by up to about a microsecond (CRecorder.c, "timestamps").
            #expect(wait.end.timestamp - wait.begin.timestamp >= 10_000_000 - 2_000)
        }
        // .waited: a thread waited, so a recording that never completed would have lost events.
        #expect(run.files == [".proc-\(run.pid).start", ".proc-\(run.pid).waited", ".proc-\(run.pid).end", "stream-\(run.pid)-\(run.pid)"])
        #expect(run.health.recordingCutOff == false)
        #expect(run.health.eventsLost == 0)
    }

    @Test func everyWrappedCallIsMappedToItsTargetSetSizeAndTimeout() throws {
        let run = try runInterposed(["calls"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        let fds = try #require(run.output.stdout.split(separator: "\n").first { $0.hasPrefix("fds ") }?
            .split(separator: " ").dropFirst().compactMap { Int32($0) })
        let (ep, pipe) = (fds[0], fds[1])
        let ms: Int64 = 1_000_000
        let idle = TraceEvent.Payload.waitEnd(ready: 0, error: 0)
        #expect(run.payloads(thread: run.pid) == [
            announcement(pid: run.pid, ppid: getpid()),
            .waitBegin(call: .poll, target: -1, setSize: 3, timeout: 2 * ms), idle,
            .waitBegin(call: .ppoll, target: -1, setSize: 2, timeout: 3 * ms), idle,
            .waitBegin(call: .select, target: -1, setSize: UInt32(pipe + 1), timeout: 4 * ms), idle,
            .waitBegin(call: .pselect, target: -1, setSize: UInt32(pipe + 1), timeout: 5 * ms), idle,
            .waitBegin(call: .epollPwait, target: ep, setSize: 8, timeout: 6 * ms), idle,
            .waitBegin(call: .epollPwait2, target: ep, setSize: 5, timeout: 7 * ms), idle,
            .waitBegin(call: .poll, target: -1, setSize: 1, timeout: -1), .waitEnd(ready: 1, error: 0),
        ])
    }

    @Test func errnoIsLeftAsTheRealCallLeftIt() throws {
        // The program itself checks EBADF after epoll_wait(-1, …) and an unchanged errno after successful calls.
        let run = try runInterposed(["errno"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        let ep = try #require(run.epollDescriptors(thread: run.pid).first)
        #expect(run.payloads(thread: run.pid) == [
            announcement(pid: run.pid, ppid: getpid()),
            .waitBegin(call: .epollWait, target: -1, setSize: 1, timeout: 0), .waitEnd(ready: -1, error: EBADF),
            .waitBegin(call: .epollWait, target: ep, setSize: 1, timeout: 0), .waitEnd(ready: 0, error: 0),
            .waitBegin(call: .poll, target: -1, setSize: 0, timeout: 0), .waitEnd(ready: 0, error: 0),
        ])
    }

    @Test func aSignalInsideAWaitEndsItWithEINTR() throws {
        let run = try runInterposed(["eintr"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        #expect(run.payloads(thread: run.pid) == [
            announcement(pid: run.pid, ppid: getpid()),
            .waitBegin(call: .poll, target: -1, setSize: 0, timeout: 2_000_000_000), .waitEnd(ready: -1, error: EINTR),
        ])
    }

    @Test func eachWaitingThreadHasItsStreamAndAnnouncesItself() throws {
        let run = try runInterposed(["threads"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        let threads = Set(run.events.map(\.threadID))
        #expect(threads.count == 3)
        #expect(!threads.contains(run.pid))   // the main thread only joins
        #expect(run.files.filter { $0.hasPrefix("stream-") } == Set(threads.map { "stream-\(run.pid)-\($0)" }))
        var timeouts: Set<Int64> = []
        for thread in threads {
            let ep = try #require(run.epollDescriptors(thread: thread).first)
            let payloads = run.payloads(thread: thread)
            #expect(payloads.first == announcement(pid: run.pid, ppid: getpid()))
            guard case .waitBegin(_, _, _, let timeout)? = payloads.dropFirst().first else {
                Issue.record("thread \(thread) has no wait: \(payloads)")
                continue
            }
            timeouts.insert(timeout / 1_000_000)
            #expect(Array(payloads.dropFirst()) == idleEpollWaits(3, ep: ep, milliseconds: timeout / 1_000_000))
        }
        #expect(timeouts == [1, 2, 3])
        #expect(run.marker(".proc-\(run.pid).end")?["threads"] == "3")
    }
}
