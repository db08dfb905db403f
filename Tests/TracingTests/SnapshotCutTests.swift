import CRecorder
import CRunLoopLinux
import Foundation
import Glibc
import Testing
import TestSupport
import Tracing

/// A flight-recorder snapshot is copied by another thread after the stall that asked for it; by then the loop
/// may have closed more packets (its next stall, on a loaded machine). The copy is cut where it was asked for.
@Suite(.serialized) struct SnapshotCutTests {
    /// Each packet of a copied stream: its end timestamp.
    private static func packetEnds(_ stream: [UInt8]) -> [UInt64] {
        var ends: [UInt64] = []
        var at = 0
        while at + 44 <= stream.count {
            let bits = stream[(at + 36)..<(at + 44)].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
            ends.append(stream[(at + 28)..<(at + 36)].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) })
            guard bits >= 8 else { break }
            at += Int(bits / 8)
        }
        return ends
    }

    /// The streams of a copy, by thread id.
    private static func copy(_ cut: rlrec_snapshot_cut?) -> [Int32: [UInt8]] {
        final class Streams { var byThread: [Int32: [UInt8]] = [:] }
        let streams = Streams()
        let sink: rlrec_stream_sink = { context, tid, data, size in
            Unmanaged<Streams>.fromOpaque(context!).takeUnretainedValue().byThread[tid] = Array(UnsafeBufferPointer(start: data, count: size))
        }
        let copied = withExtendedLifetime(streams) {
            let context = Unmanaged.passUnretained(streams).toOpaque()
            guard var cut else { return rlrec_copy_ring(sink, context, nil) }
            return rlrec_copy_ring(sink, context, &cut)
        }
        #expect(copied >= 0)
        return streams.byThread
    }

    @Test func aCopyMadeLateShowsTheRingsAsTheyWereAtItsCut() throws {
        var options = EmbeddedRecorder.Options()
        options.mode = .overwrite
        options.packetSize = 4096
        options.switchInterval = nil
        let asker = Shared<Int32>(0), other = Shared<Int32>(0)
        let cutHolder = Shared<rlrec_snapshot_cut?>(nil)
        let copies = Shared<(late: [Int32: [UInt8]], whole: [Int32: [UInt8]])>(([:], [:]))
        _ = try record("snapshot-cut", options: options) {
            let otherClosed = DispatchSemaphore(value: 0), otherGoesOn = DispatchSemaphore(value: 0)
            let otherThread = JoinableThread {
                other.value = crl_gettid()
                for index in 0..<3 { rlrec_probe_fire(2, UInt64(index), 0, 0) }
                _ = rlrec_close_thread_packet(0)
                otherClosed.signal()
                otherGoesOn.wait()
                // Closed after the cut: newer than the moment the snapshot shows.
                for index in 3..<5 { rlrec_probe_fire(2, UInt64(index), 0, 0) }
                _ = rlrec_close_thread_packet(0)
            }
            let askingThread = JoinableThread {
                asker.value = crl_gettid()
                otherClosed.wait()
                // Margin for the threads' clocks (each extrapolates the TSC from its own anchor).
                usleep(1_000)
                for index in 0..<3 { rlrec_probe_fire(1, UInt64(index), 0, 0) }
                cutHolder.value = rlrec_close_thread_packet(rlrec_last_timestamp())
                usleep(1_000)
                // The loop's next stall, before the snapshot thread got to the copy.
                for index in 3..<6 { rlrec_probe_fire(1, UInt64(index), 0, 0) }
                _ = rlrec_close_thread_packet(rlrec_last_timestamp())
                otherGoesOn.signal()
            }
            otherThread.start()
            askingThread.start()
            askingThread.join()
            otherThread.join()
            copies.value = (Self.copy(cutHolder.value), Self.copy(nil))
        }
        let cut = try #require(cutHolder.value)
        #expect(cut.thread != nil && cut.packets == 1)
        let (late, whole) = copies.value
        // Uncut, the copy has everything closed by the time it ran: two packets of each thread.
        #expect(whole[asker.value].map(Self.packetEnds)?.count == 2)
        #expect(whole[other.value].map(Self.packetEnds)?.count == 2)
        // Cut, each thread's packets closed by the ask: the asker's first, the other's first.
        let askerEnds = try #require(late[asker.value].map(Self.packetEnds))
        let otherEnds = try #require(late[other.value].map(Self.packetEnds))
        #expect(askerEnds == [cut.at_ns])
        #expect(otherEnds.count == 1 && otherEnds.allSatisfy { $0 <= cut.at_ns }, "\(otherEnds) after \(cut.at_ns)")
    }
}
