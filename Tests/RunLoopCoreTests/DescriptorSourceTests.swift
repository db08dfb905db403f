import Glibc
import RunLoopCore
import Testing

/// Rulebook §6 (rule 20): descriptor sources wake the loop by themselves and lose no data.
@Suite struct DescriptorSourceTests {
    /// Writes `total` bytes in uneven chunks from another thread into `writeEnd` while a loop on a fresh thread
    /// reads `readEnd` through a DescriptorSource; returns the bytes the handler read.
    private func pump(readEnd: Int32, writeEnd: Int32, total: Int) -> [UInt8] {
        let expected = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 251) }
        let received = onThread { () -> [UInt8] in
            let loop = Loop.current
            let received = Shared<[UInt8]>([])
            received.value.reserveCapacity(total)
            let source = DescriptorSource(fileDescriptor: readEnd) { source, events in
                var buffer = [UInt8](repeating: 0, count: 1000)   // odd size: reads never align with writes
                let n = read(source.fileDescriptor, &buffer, buffer.count)
                let count = received.mutate { received in
                    if n > 0 { received.append(contentsOf: buffer[0..<n]) }
                    return received.count
                }
                if n == 0 || count >= total { loop.stop() }
            }
            loop.add(source, forMode: .default)
            let writer = JoinableThread {
                var offset = 0
                var chunk = 1
                while offset < total {
                    let size = min(chunk, total - offset)
                    let n = expected[offset..<(offset + size)].withUnsafeBytes { write(writeEnd, $0.baseAddress, size) }
                    if n > 0 { offset += n } else { usleep(100) }
                    chunk = chunk % 4093 + 97
                }
            }
            writer.start()
            loop.run(mode: .default, timeout: .seconds(20))
            writer.join()
            source.invalidate()
            return received.value
        }
        return received == expected ? received : { Issue.record("received \(received.count) of \(total) bytes, content equal: \(received == expected)"); return received }()
    }

    @Test func aPipeDeliversEveryByte() {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let total = 1 << 20
        #expect(pump(readEnd: fds[0], writeEnd: fds[1], total: total).count == total)
    }

    @Test func aSocketPairDeliversEveryByte() {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let total = 1 << 20
        #expect(pump(readEnd: fds[0], writeEnd: fds[1], total: total).count == total)
    }

    @Test func hangUpIsReportedAndTheDescriptorIsNotClosed() {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }
        let events = onThread { () -> DescriptorSource.Events in
            let loop = Loop.current
            let seen = Shared<DescriptorSource.Events>([])
            let source = DescriptorSource(fileDescriptor: readEnd) { _, events in
                seen.value = events
                loop.stop()
            }
            loop.add(source, forMode: .default)
            close(writeEnd)
            loop.run(mode: .default, timeout: .seconds(5))
            source.invalidate()
            return seen.value
        }
        #expect(events.contains(.hangUp))
        #expect(fcntl(readEnd, F_GETFD) != -1, "invalidate must not close the caller's descriptor")
    }

    @Test func writableInterestIsReported() {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let (local, remote) = (fds[0], fds[1])
        defer { close(local); close(remote) }
        let result = onThread { () -> Loop.RunResult in
            let loop = Loop.current
            let source = DescriptorSource(fileDescriptor: local, events: .writable) { _, events in
                #expect(events.contains(.writable))
            }
            loop.add(source, forMode: .default)
            defer { source.invalidate() }
            return loop.run(mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
    }

    @Test func aDescriptorWakesOnlyRunsOfItsModes() {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd); close(writeEnd) }
        let (other, own) = onThread { () -> (Loop.RunResult, Loop.RunResult) in
            let loop = Loop.current
            let source = DescriptorSource(fileDescriptor: readEnd) { source, _ in
                var byte: UInt8 = 0
                _ = read(source.fileDescriptor, &byte, 1)
            }
            loop.add(source, forMode: "io")
            loop.add(LoopSource {}, forMode: .default)
            var byte: UInt8 = 1
            _ = write(writeEnd, &byte, 1)
            let other = loop.run(mode: .default, timeout: .milliseconds(30), returnAfterSourceHandled: true)
            let own = loop.run(mode: "io", timeout: .seconds(5), returnAfterSourceHandled: true)
            source.invalidate()
            return (other, own)
        }
        #expect(other == .timedOut)
        #expect(own == .handledSource)
    }
}
