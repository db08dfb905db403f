import Dispatch
import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rulebook rule 20a and issue 11's bad input for descriptors: readiness is current after a nested run, a
/// registration belongs to its source and not to its descriptor number, and a source stops being called once it
/// is invalidated, from any thread.
@Suite struct DescriptorReadinessTests {
    private func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        return (fds[0], fds[1])
    }

    @Test func readinessANestedRunConsumedIsNotHandedToTheHandlerAgain() throws {
        let (a, aWrite) = try makePipe()
        let (b, bWrite) = try makePipe()
        defer { for fd in [a, aWrite, b, bWrite] { close(fd) } }
        let trace = onVirtualLoop { kernel, loop -> String in
            let log = TraceLog()
            let first = DescriptorSource(fileDescriptor: a, order: 1) { _, _ in
                log.append("A<")
                kernel.setReadiness([], of: a)
                loop.run(mode: .default, timeout: .zero)
                log.append("A>")
            }
            let second = DescriptorSource(fileDescriptor: b, order: 2) { _, _ in
                log.append("B")
                kernel.setReadiness([], of: b)   // what a read of all its data does
            }
            loop.add(first, forMode: .default)
            loop.add(second, forMode: .default)
            kernel.setReadiness(.readable, of: a)
            kernel.setReadiness(.readable, of: b)
            loop.run(mode: .default, timeout: .zero)
            first.invalidate()
            second.invalidate()
            return log.text
        }
        #expect(trace == "A< B A>")
    }

    /// The same rule on the real kernel: a stale call would find nothing to read (a blocking read would hang).
    @Test func onTheRealKernelTheOuterPassDoesNotCallAHandlerWhoseDataANestedRunRead() throws {
        let (a, aWrite) = try makePipe()
        let (b, bWrite) = try makePipe()
        defer { for fd in [a, aWrite, b, bWrite] { close(fd) } }
        #expect(fcntl(b, F_SETFL, O_NONBLOCK) == 0)
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let first = DescriptorSource(fileDescriptor: a, order: 1) { _, _ in
                var byte: UInt8 = 0
                _ = read(a, &byte, 1)
                log.append("A<")
                loop.run(mode: .default, timeout: .zero)
                log.append("A>")
            }
            let second = DescriptorSource(fileDescriptor: b, order: 2) { _, _ in
                var byte: UInt8 = 0
                log.append(read(b, &byte, 1) == 1 ? "B" : "B(stale)")
            }
            loop.add(first, forMode: .default)
            loop.add(second, forMode: .default)
            var byte: UInt8 = 1
            _ = write(aWrite, &byte, 1)
            _ = write(bWrite, &byte, 1)
            loop.run(mode: .default, timeout: .zero)
            first.invalidate()
            second.invalidate()
            return log.text
        }
        #expect(trace == "A< B A>")
    }

    @Test func removingASourceNeverUnwatchesAnotherSourceThatNowHasTheSameDescriptorNumber() throws {
        let (old, oldWrite) = try makePipe()
        let (fresh, freshWrite) = try makePipe()
        defer { for fd in [old, oldWrite, fresh, freshWrite] { close(fd) } }
        let (result, calls) = onThread { () -> (Loop.RunResult, String) in
            let loop = Loop.current
            let log = TraceLog()
            let stale = DescriptorSource(fileDescriptor: old) { _, _ in log.append("stale") }
            loop.add(stale, forMode: .default)
            // The owner closes the descriptor under its registered source, and the number is reused at once.
            #expect(dup2(fresh, old) == old)
            let current = DescriptorSource(fileDescriptor: old) { source, _ in
                var byte: UInt8 = 0
                _ = read(source.fileDescriptor, &byte, 1)
                log.append("current")
            }
            loop.add(current, forMode: .default)
            #expect(current.isValid && current.watchFailure == nil)
            stale.invalidate()
            var byte: UInt8 = 1
            _ = write(freshWrite, &byte, 1)
            let result = loop.run(mode: .default, timeout: .seconds(2), returnAfterSourceHandled: true)
            current.invalidate()
            return (result, log.text)
        }
        #expect(result == .handledSource)
        #expect(calls == "current")
    }

    @Test func aDescriptorClosedUnderARegisteredSourceIsNeverReportedAgain() throws {
        let (readEnd, writeEnd) = try makePipe()
        defer { close(writeEnd) }
        let (result, calls, cancels) = onThread { () -> (Loop.RunResult, Int, Int) in
            let loop = Loop.current
            let calls = Shared(0)
            let cancels = Shared(0)
            let source = DescriptorSource(fileDescriptor: readEnd, cancel: { _ in cancels.value += 1 }) { _, _ in
                calls.value += 1
            }
            loop.add(source, forMode: .default)
            // The write end stays open, so the pipe does not hang up: only the close could be reported, and it is not.
            close(readEnd)
            let result = loop.run(mode: .default, timeout: .milliseconds(20))
            source.invalidate()
            return (result, calls.value, cancels.value)
        }
        #expect(result == .timedOut)
        #expect(calls == 0)
        #expect(cancels == 1)
    }

    @Test func invalidateFromAnotherThreadDuringTheHandlerEndsTheCallsAndThenRunsTheCancelHandler() throws {
        let (readEnd, writeEnd) = try makePipe()
        defer { close(readEnd); close(writeEnd) }
        let (trace, calls) = onVirtualLoop { kernel, loop -> (String, Int) in
            let log = TraceLog()
            let calls = Shared(0)
            let inHandler = DispatchSemaphore(value: 0)
            let invalidated = DispatchSemaphore(value: 0)
            let loopThread = Shared<pthread_t?>(pthread_self())
            let source = DescriptorSource(fileDescriptor: readEnd, cancel: { _ in
                log.append(pthread_equal(pthread_self(), loopThread.value!) != 0 ? "cancel(loop thread)" : "cancel(other)")
            }) { _, _ in
                calls.value += 1
                guard calls.value == 1 else { return }
                log.append("H<")
                inHandler.signal()
                invalidated.wait()
                log.append("H>")
            }
            loop.add(source, forMode: .default)
            kernel.setReadiness(.readable, of: readEnd)   // and it stays readable
            let other = JoinableThread {
                inHandler.wait()
                source.invalidate()
                log.append("invalidated")
                invalidated.signal()
            }
            other.start()
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(10))
            other.join()
            return (log.text, calls.value)
        }
        #expect(trace == "H< invalidated H> cancel(loop thread)")
        #expect(calls == 1)
    }

    @Test func invalidateOnTheLoopsThreadRunsTheCancelHandlerBeforeItReturns() throws {
        let (readEnd, writeEnd) = try makePipe()
        defer { close(readEnd); close(writeEnd) }
        let trace = onVirtualLoop { kernel, loop -> String in
            let log = TraceLog()
            let source = DescriptorSource(fileDescriptor: readEnd, cancel: { _ in log.append("cancel") }) { _, _ in
                log.append("H")
            }
            loop.add(source, forMode: .default)
            kernel.setReadiness(.readable, of: readEnd)
            loop.run(mode: .default, timeout: .zero)
            source.invalidate()
            log.append("returned")
            source.invalidate()
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return log.text
        }
        #expect(trace == "H cancel returned")
    }

    // ===== registration races are reported, not fatal (issue 11 item 5) =====

    /// In a child process: between the close and the add, no other test may reuse the descriptor number.
    @Test func aDescriptorClosedBeforeItsSourceIsAddedIsReportedAndTheAddDoesNothing() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            // The loop and its mode's wait set first, so that their own descriptors cannot reuse the closed number.
            let loop = Loop.current
            loop.add(LoopSource {}, forMode: .default)
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            let cancels = Shared(0)
            let source = DescriptorSource(fileDescriptor: fds[0], cancel: { _ in cancels.value += 1 }) { _, _ in }
            close(fds[0])   // by "another thread", between the source's creation and its add
            loop.add(source, forMode: .default)
            let outcome = "contained:\(loop.contains(source, inMode: .default)) valid:\(source.isValid) "
                + "errno:\(source.watchFailure?.errno ?? 0) cancels:\(cancels.value)"
            guard outcome == "contained:false valid:false errno:\(EBADF) cancels:1" else {
                print(outcome)
                exit(1)
            }
        }
        if let output = result?.standardOutputContent, !output.isEmpty {
            Issue.record("child: \(String(decoding: output, as: UTF8.self))")
        }
    }

    @Test func aSecondSourceForTheSameDescriptorInAModeIsReportedAndTheFirstKeepsWorking() throws {
        let (readEnd, writeEnd) = try makePipe()
        defer { close(readEnd); close(writeEnd) }
        let (failure, secondValid, result, calls) = onThread { () -> (Int32?, Bool, Loop.RunResult, String) in
            let loop = Loop.current
            let log = TraceLog()
            let first = DescriptorSource(fileDescriptor: readEnd) { source, _ in
                var byte: UInt8 = 0
                _ = read(source.fileDescriptor, &byte, 1)
                log.append("first")
            }
            let second = DescriptorSource(fileDescriptor: readEnd) { _, _ in log.append("second") }
            loop.add(first, forMode: .default)
            loop.add(second, forMode: .default)
            // The refused one leaves the first's registration alone.
            second.invalidate()
            var byte: UInt8 = 1
            _ = write(writeEnd, &byte, 1)
            let result = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
            first.invalidate()
            return (second.watchFailure?.errno, second.isValid, result, log.text)
        }
        #expect(failure == EEXIST)
        #expect(!secondValid)
        #expect(result == .handledSource)
        #expect(calls == "first")
    }
}
