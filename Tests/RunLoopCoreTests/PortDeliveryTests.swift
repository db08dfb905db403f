import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rulebook rule 21a: a port delivers one message at a time, only in its modes, in send order across nested runs,
/// and its own loop's thread never blocks on its full queue. Virtual time, so every sleep is exact.
@Suite struct PortDeliveryTests {
    /// A port whose handler logs `m<msgid>` and then runs `then` with the message id.
    private static func loggingPort(_ log: TraceLog, capacity: Int = 64,
                                    then: @escaping @Sendable (LoopPort, Int32) -> Void = { _, _ in }) -> LoopPort {
        LoopPort(capacity: capacity) { port, message in
            log.append("m\(message.msgid)")
            then(port, message.msgid)
        }
    }

    @Test func removingThePortFromTheModeInItsHandlerLeavesTheRestQueued() {
        let (trace, queued) = onVirtualLoop { _, loop -> (String, Int) in
            let log = TraceLog()
            let port = Self.loggingPort(log) { port, msgid in
                if msgid == 2 { loop.remove(port, forMode: .default) }
            }
            loop.add(port, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            for msgid in 1...5 { try! port.send(msgid: Int32(msgid)) }
            loop.run(mode: .default, timeout: .milliseconds(10))
            let queued = port.queuedCount
            log.append("|")
            loop.add(port, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(10))
            port.invalidate()
            return (log.text, queued)
        }
        #expect(trace == "m1 m2 | m3 m4 m5")
        #expect(queued == 3)
    }

    @Test func invalidatingThePortInItsHandlerDropsTheRest() {
        let (trace, queued) = onVirtualLoop { _, loop -> (String, Int) in
            let log = TraceLog()
            let port = Self.loggingPort(log) { port, msgid in
                if msgid == 2 { port.invalidate() }
            }
            loop.add(port, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            for msgid in 1...5 { try! port.send(msgid: Int32(msgid)) }
            loop.run(mode: .default, timeout: .milliseconds(10))
            return (log.text, port.queuedCount)
        }
        #expect(trace == "m1 m2")
        #expect(queued == 0)
    }

    @Test func sendOrderHoldsAcrossANestedRunStartedByTheHandler() {
        let trace = onVirtualLoop { _, loop -> String in
            let log = TraceLog()
            let port = Self.loggingPort(log) { port, msgid in
                guard msgid == 1 else { return }
                // Sent while the outer pass is inside m1's handler; the nested run must deliver m2 before m3.
                try! port.send(msgid: 3)
                log.append("<")
                loop.run(mode: .default, timeout: .zero)
                log.append(">")
            }
            loop.add(port, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            try! port.send(msgid: 1)
            try! port.send(msgid: 2)
            loop.run(mode: .default, timeout: .zero)
            port.invalidate()
            return log.text
        }
        #expect(trace == "m1 < m2 m3 >")
    }

    @Test func aPortThatHoldsAMessageMakesTheIterationAPoll() {
        let (trace, result, sleeps) = onVirtualLoop { kernel, loop -> (String, Loop.RunResult, Int) in
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            let port = Self.loggingPort(log)
            loop.add(port, forMode: .default)
            try! port.send(msgid: 1)
            let result = loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
            port.invalidate()
            return (log.text, result, kernel.sleeps.count)
        }
        #expect(trace == "Entry BT BS m1 Exit")
        #expect(result == .handledSource)
        #expect(sleeps == 0)
    }

    @Test func aMessageForAPortNotInTheRunningModeNeitherIsDeliveredNorWakesTheRun() {
        let (trace, sleeps, later) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>], String) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            let port = Self.loggingPort(log)
            loop.add(port, forMode: "ports")
            loop.add(LoopSource {}, forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10))) { _ in
                log.append("T1")
                try! port.send(msgid: 1)
            }, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(50))
            let trace = log.text
            log.clear()
            loop.run(mode: "ports", timeout: .seconds(1), returnAfterSourceHandled: true)
            port.invalidate()
            return (trace, kernel.sleepOffsets(since: start), log.text)
        }
        #expect(trace == "Entry BT BS BW AW T1 BT BS BW AW Exit")
        #expect(sleeps == [.zero ... .milliseconds(10), .milliseconds(10) ... .milliseconds(50)])
        #expect(later == "m1")
    }

    @Test func aSendFromTheLoopsOwnThreadToItsFullQueueFailsAtOnce() {
        let (failure, waited) = onVirtualLoop { _, loop -> (LoopPort.Failure?, Duration) in
            let port = LoopPort(capacity: 2) { _, _ in }
            loop.add(port, forMode: .default)
            try! port.send(msgid: 1)
            try! port.send(msgid: 2)
            let start = Loop.Instant.now
            var failure: LoopPort.Failure?
            do { try port.send(msgid: 3, timeout: .seconds(2)) } catch { failure = error as? LoopPort.Failure }
            let waited = start.duration(to: .now)
            port.invalidate()
            return (failure, waited)
        }
        #expect(failure == .queueFullOnLoopThread)
        // Real time: "at once" is far below the send timeout it would otherwise wait out.
        #expect(waited < .seconds(1))
    }

    @Test func aSenderOnAnotherThreadStillWaitsForRoom() throws {
        let background = BackgroundLoop()
        defer { background.stop() }
        let delivered = Shared<[Int32]>([])
        let port = LoopPort(capacity: 1) { _, message in delivered.mutate { $0.append(message.msgid) } }
        background.loop.add(port, forMode: .default)
        for msgid in 1...20 { try port.send(msgid: Int32(msgid), timeout: .seconds(10)) }
        #expect(eventually { delivered.value.count == 20 })
        #expect(delivered.value == Array(1...20))
        port.invalidate()
    }
}
