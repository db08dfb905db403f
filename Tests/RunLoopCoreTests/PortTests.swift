import Glibc
import RunLoopCore
import Testing

/// Rulebook §6 (rule 21): message ports between threads.
@Suite struct PortTests {
    @Test func messagesFromSeveralThreadsArriveInSendOrderNoneLostOrDuplicated() {
        let senders = 4
        let perSender = 5_000
        let received = Shared<[[Int32]]>(Array(repeating: [], count: senders))
        let total = Shared(0)
        let background = BackgroundLoop()
        defer { background.stop() }
        let port = LoopPort(capacity: 256) { _, message in
            let sender = Int(message.data[0])
            received.mutate { $0[sender].append(message.msgid) }
            total.value += 1
        }
        background.loop.add(port, forMode: .default)
        let threads = (0..<senders).map { sender in
            JoinableThread {
                for index in 0..<perSender {
                    try! port.send(msgid: Int32(index), data: [UInt8(sender)])
                }
            }
        }
        threads.forEach { $0.start() }
        threads.forEach { $0.join() }
        #expect(eventually { total.value == senders * perSender })
        for sender in 0..<senders {
            #expect(received.value[sender] == (0..<perSender).map(Int32.init), "sender \(sender): out of order, lost or duplicated")
        }
    }

    @Test func portsAreFoundByName() throws {
        let port = LoopPort { _, _ in }
        let name = "rl-test-\(port.id)"
        try port.register(name: name)
        #expect(LoopPort.lookUp(name: name) === port)
        #expect(port.name == name)
        let other = LoopPort { _, _ in }
        #expect(throws: LoopPort.Failure.nameInUse(name)) { try other.register(name: name) }
        port.invalidate()
        #expect(LoopPort.lookUp(name: name) == nil)
        try other.register(name: name)
        #expect(LoopPort.lookUp(name: name) === other)
        other.invalidate()
    }

    @Test func requestReplyRoundTrips() throws {
        let background = BackgroundLoop()
        defer { background.stop() }
        let server = LoopPort { _, message in
            try? message.replyPort?.send(msgid: message.msgid + 1, data: message.data.reversed())
        }
        try server.register(name: "rl-test-echo-\(server.id)")
        background.loop.add(server, forMode: .default)
        let client = LoopPort.lookUp(name: "rl-test-echo-\(server.id)")!
        let reply = try client.sendRequest(msgid: 41, data: [1, 2, 3], sendTimeout: .seconds(1), receiveTimeout: .seconds(5))
        #expect(reply.msgid == 42)
        #expect(reply.data == [3, 2, 1])
        server.invalidate()
    }

    @Test func requestTimesOutWhenNobodyReplies() {
        let background = BackgroundLoop()
        defer { background.stop() }
        let silent = LoopPort { _, _ in }
        background.loop.add(silent, forMode: .default)
        let start = Loop.Instant.now
        #expect(throws: LoopPort.Failure.receiveTimedOut) {
            _ = try silent.sendRequest(msgid: 1, receiveTimeout: .milliseconds(50))
        }
        #expect(milliseconds(start, .now) >= 50)
        silent.invalidate()
    }

    @Test func sendTimesOutWhenTheQueueStaysFull() {
        let unscheduled = LoopPort(capacity: 2) { _, _ in }
        #expect(throws: Never.self) {
            try unscheduled.send(msgid: 1)
            try unscheduled.send(msgid: 2)
        }
        #expect(throws: LoopPort.Failure.sendTimedOut) { try unscheduled.send(msgid: 3, timeout: .milliseconds(20)) }
        unscheduled.invalidate()
        #expect(throws: LoopPort.Failure.invalidPort) { try unscheduled.send(msgid: 4) }
    }

    @Test func messagesWaitWhileThePortIsNotInTheRunningMode() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let port = LoopPort { _, message in log.append("m\(message.msgid)") }
            loop.add(port, forMode: "ports")
            loop.add(LoopSource {}, forMode: .default)
            try! port.send(msgid: 1)
            try! port.send(msgid: 2)
            loop.run(mode: .default, timeout: .milliseconds(20))
            log.append("|")
            let result = loop.run(mode: "ports", timeout: .seconds(1), returnAfterSourceHandled: true)
            log.append("\(result)")
            loop.run(mode: "ports", timeout: .seconds(1), returnAfterSourceHandled: true)
            port.invalidate()
            return log.text
        }
        #expect(trace == "| m1 handled_source m2")
    }

    @Test func aPortMessageWakesASleepingLoop() {
        let background = BackgroundLoop(turn: .seconds(3600))   // no run's end wakes the loop instead
        defer { background.stop() }
        let got = Shared(false)
        let port = LoopPort { _, _ in got.value = true }
        background.loop.add(port, forMode: .default)
        #expect(eventually { background.loop.isWaiting })
        try? port.send(msgid: 7)
        #expect(eventually { got.value })
        #expect(background.loop.statistics.wakeUps(.port) >= 1)
        port.invalidate()
    }

    @Test func receiveReadsAnUnscheduledPort() throws {
        let port = LoopPort()
        let sender = JoinableThread { try? port.send(msgid: 9, data: [1]) }
        sender.start()
        let message = try port.receive(timeout: .seconds(5))
        sender.join()
        #expect(message.msgid == 9 && message.data == [1])
        #expect(throws: LoopPort.Failure.receiveTimedOut) { _ = try port.receive(timeout: .milliseconds(10)) }
    }
}
