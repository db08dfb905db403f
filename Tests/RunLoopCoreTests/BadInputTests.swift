import Foundation
import Glibc
import RunLoopCore
import Testing

/// API misuse stops the program with a message that names the mistake (checked in a child process each).
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

    @Test func addingAnInvalidatedItem() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let timer = LoopTimer(after: .zero) { _ in }
            timer.invalidate()
            Loop.current.add(timer, forMode: .default)
        }, "the LoopTimer was invalidated")
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let source = LoopSource {}
            source.invalidate()
            Loop.current.add(source, forMode: .default)
        }, "the LoopSource was invalidated")
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

    @Test func aDescriptorClosedBeforeItWasAdded() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = Loop.current   // created first, so its own descriptors cannot reuse the closed number
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            let source = DescriptorSource(fileDescriptor: fds[0]) { _, _ in }
            close(fds[0])
            loop.add(source, forMode: .default)
        }, "was it closed before the source was added?")
    }

    @Test func aRegularFileCannotBeWatched() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let fd = open("/proc/self/status", O_RDONLY)
            let file = open(CommandLine.arguments[0], O_RDONLY)
            _ = fd
            Loop.current.add(DescriptorSource(fileDescriptor: file) { _, _ in }, forMode: .default)
        }, "a regular file or directory is always ready")
    }

    @Test func theSameDescriptorTwiceInOneMode() async {
        expectUsageMessage(await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            Loop.current.add(DescriptorSource(fileDescriptor: fds[0]) { _, _ in }, forMode: .default)
            Loop.current.add(DescriptorSource(fileDescriptor: fds[0]) { _, _ in }, forMode: .default)
        }, "is already watched in mode")
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
