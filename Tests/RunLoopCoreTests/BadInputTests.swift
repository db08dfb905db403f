import Foundation
import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// API misuse stops the program with a message that names the mistake (checked in a child process each).
/// What may be a runtime race in a server (an item invalidated while it is added, a descriptor closed under its
/// source) is defined behaviour instead: see `RuntimeRaceTests` below and `DescriptorReadinessTests`.
@Suite struct BadInputTests {
    /// Checks that a child process died printing `message` (exit-test bodies cannot capture, so each test
    /// spells out its own `#expect(processExitsWith:)`).
    private func expectUsageMessage(_ result: ExitTest.Result?, _ message: String,
                                    sourceLocation: SourceLocation = #_sourceLocation) {
        guard let result else { return }
        let stderr = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(stderr.contains("RunLoopCore usage error:") && stderr.contains(message), "stderr was: \(stderr.prefix(400))",
                sourceLocation: sourceLocation)
    }

    @Test func aNegativeRunTimeout() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Loop.current.add(LoopSource {}, forMode: .default)
            Loop.current.run(mode: .default, timeout: .milliseconds(-1))
        }, "Loop.run: the timeout must not be negative")
    }

    @Test func aNegativeTimerInterval() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = LoopTimer(after: .zero, interval: .seconds(-1)) { _ in }
        }, "LoopTimer: the interval must not be negative")
    }

    @Test func aNegativeTolerance() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = LoopTimer(after: .zero, tolerance: .nanoseconds(-1)) { _ in }
        }, "LoopTimer: the tolerance must not be negative")
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            LoopTimer(after: .zero) { _ in }.tolerance = .seconds(-2)
        }, "LoopTimer.tolerance must not be negative")
    }

    @Test func addingAnItemToASecondLoop() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let source = LoopSource {}
            Loop.main.add(source, forMode: .default)
            let thread = JoinableThread { Loop.current.add(source, forMode: .default) }
            thread.start()
            thread.join()
        }, "the LoopSource already belongs to another loop")
    }

    @Test func runningALoopFromAnotherThread() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = onThread { () -> Loop in
                let loop = Loop.current
                loop.add(LoopSource {}, forMode: .default)
                return loop
            }
            // Not the thread that owns it (and that thread has exited): refused, not run.
            let other = JoinableThread {
                _ = Loop.current
                loop.run(mode: .default, timeout: .zero)
            }
            other.start()
            other.join()
        }, "a loop only runs on its own thread")
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let other = JoinableThread {
                Loop.main.add(LoopSource {}, forMode: .default)
                Loop.main.run(mode: .default, timeout: .zero)
            }
            other.start()
            other.join()
        }, "a loop only runs on its own thread")
    }

    @Test func aClosedDescriptor() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            close(fds[0])
            _ = DescriptorSource(fileDescriptor: fds[0]) { _, _ in }
        }, "is not an open file descriptor")
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = DescriptorSource(fileDescriptor: -1) { _, _ in }
        }, "is not an open file descriptor")
    }

    @Test func aRegularFileCannotBeWatched() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let fd = open("/proc/self/status", O_RDONLY)
            let file = open(CommandLine.arguments[0], O_RDONLY)
            _ = fd
            Loop.current.add(DescriptorSource(fileDescriptor: file) { _, _ in }, forMode: .default)
        }, "a regular file or directory is always ready")
    }

    @Test func aRequestToAPortServedByTheCallersOwnLoop() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let port = LoopPort { _, _ in }
            Loop.current.add(port, forMode: .default)
            _ = try? port.sendRequest(msgid: 1)
        }, "served by the calling thread's own loop")
    }

    @Test func theCommonTokenIsNotAMode() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Loop.current.addCommonMode(.common)
        }, ".common is the token for the common modes")
    }
}

/// Issue 11's "bad input" that is not a programming error: each is defined behaviour, never a stop or a hang.
@Suite struct RuntimeRaceTests {
    @Test func addingAnInvalidatedItemDoesNothing() {
        let contained = onThread { () -> [Bool] in
            let loop = Loop.current
            let timer = LoopTimer(after: .zero) { _ in }
            let source = LoopSource {}
            let observer = LoopObserver(activities: .all) { _, _ in }
            let port = LoopPort { _, _ in }
            timer.invalidate()
            source.invalidate()
            observer.invalidate()
            port.invalidate()
            loop.add(timer, forMode: .default)
            loop.add(source, forMode: .common)
            loop.add(observer, forMode: .default)
            loop.add(port, forMode: .default)
            return [loop.contains(timer, inMode: .default), loop.contains(source, inMode: .common),
                    loop.contains(observer, inMode: .default), loop.contains(port, inMode: .default),
                    loop.run(mode: .default, timeout: .zero) != .finished]
        }
        #expect(contained == [false, false, false, false, false])
    }

    @Test func aPortHandlerThatThrowsAwayItsPortEndsItsDeliveries() {
        let (trace, result) = onVirtualLoop { _, loop -> (String, Loop.RunResult) in
            let log = TraceLog()
            let holder = Shared<LoopPort?>(nil)
            holder.value = LoopPort { port, message in
                log.append("m\(message.msgid)")
                // The last reference outside the loop goes away inside the port's own callout.
                holder.value = nil
                port.invalidate()
            }
            loop.add(holder.value!, forMode: .default)
            for msgid in 1...3 { try! holder.value!.send(msgid: Int32(msgid)) }
            let result = loop.run(mode: .default, timeout: .milliseconds(10))
            return (log.text, result)
        }
        #expect(trace == "m1")
        #expect(result == .finished)
    }

    @Test func sourceHandlersThatThrowAwayTheirSourcesEndTheirCalls() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { close(fd) } }
        let readEnd = fds[0]
        let (trace, result) = onVirtualLoop { kernel, loop -> (String, Loop.RunResult) in
            let log = TraceLog()
            let descriptor = Shared<DescriptorSource?>(nil)
            let custom = Shared<LoopSource?>(nil)
            descriptor.value = DescriptorSource(fileDescriptor: readEnd, cancel: { _ in log.append("D-cancel") }) { source, _ in
                log.append("D")
                descriptor.value = nil
                source.invalidate()
            }
            custom.value = LoopSource(cancel: { _, _ in log.append("S-cancel") }) {
                log.append("S")
                let source = custom.value
                custom.value = nil
                source?.invalidate()
            }
            loop.add(descriptor.value!, forMode: .default)
            loop.add(custom.value!, forMode: .default)
            kernel.setReadiness(.readable, of: readEnd)   // stays readable
            custom.value!.signal()
            let result = loop.run(mode: .default, timeout: .milliseconds(10))
            return (log.text, result)
        }
        #expect(trace == "S S-cancel D D-cancel")
        #expect(result == .finished)
    }
}
