import CRecorder
import Foundation
import Testing
import TraceModel
import TraceReading
import Tracing

/// runloop:wait_batch, the schema's event with arrays, read back exactly by every reader (the embedded reader's
/// payload decoder, which the LTTng live reader shares, and babeltrace2), and refused clearly when an array's
/// length does not fit.
@Suite(.serialized) struct WaitBatchReadingTests {
    static let batch = TraceEvent.WaitBatch(threadID: 4343, waits: [
        .init(call: .epollPwait, target: 9, setSize: 128, timeout: 10_000_000, begin: 0x1122_3344_5566_7788, end: 0x1122_3344_5566_9999,
              ready: 3, error: 0),
        .init(call: .ppoll, target: -1, setSize: 2, timeout: -1, begin: 0x1122_3344_5567_0000, end: 0x1122_3344_5567_1000, ready: -1, error: 4),
        .init(call: .select, target: -1, setSize: 7, timeout: 0, begin: 0x1122_3344_5567_2000, end: nil, ready: 0, error: 0),
    ])

    /// A recording holding the batch, written by the recorder's encoder (expanded from the .def like LTTng's).
    static func recordBatch(_ name: String) throws -> String {
        try record(name) {
            onThread {
                let waits = batch.waits
                rlrec_wait_batch(batch.threadID, UInt32(waits.count), waits.map { $0.call.rawValue }, waits.map(\.target),
                                 waits.map(\.setSize), waits.map(\.timeout), waits.map(\.begin), waits.map { $0.end ?? 0 },
                                 waits.map(\.ready), waits.map(\.error))
            }
        }.0
    }

    static func batches(_ events: [TraceEvent]) -> [TraceEvent.WaitBatch] {
        events.compactMap { if case .waitBatch(let batch) = $0.payload { return batch } else { return nil } }
    }

    @Test func everyReaderReadsTheArraysExactly() throws {
        let folder = try Self.recordBatch("wait-batch")
        var embedded = try EmbeddedTraceReader(path: folder)
        let read = readAll(&embedded)
        #expect(read.error == nil)
        #expect(Self.batches(read.events) == [Self.batch])
        // The waits as the rows of a trace recorded wait by wait.
        let rows = Self.batch.events(processID: 0).map(\.payload.eventName)
        #expect(rows == ["wait_begin", "wait_end", "wait_begin", "wait_end", "wait_begin"])
        guard CTFTraceReader.isAvailable else { return }
        let ctf = try CTFTraceReader(path: folder)
        var events: [TraceEvent] = []
        while let event = try ctf.next() { events.append(event) }
        #expect(Self.batches(events) == [Self.batch])
    }

    @Test func anArrayLongerThanItsPacketIsAClearError() throws {
        let folder = try Self.recordBatch("wait-batch-corrupt")
        // begin_ns's first element, then the count written before its array, in the stream of the thread that
        // wrote the batch (loops of other tests running meanwhile have streams of their own in the recording).
        let first = withUnsafeBytes(of: Self.batch.waits[0].begin.littleEndian) { Data($0) }
        let streams = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("stream-") }
        let found = try streams.lazy.compactMap { stream -> (String, Data)? in
            let bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + stream))
            return bytes.range(of: first) == nil ? nil : (stream, bytes)
        }.first
        var (stream, bytes) = try #require(found, "no stream of \(streams) holds the batch")
        let at = try #require(bytes.range(of: first)).lowerBound
        bytes.replaceSubrange((at - 4)..<at, with: withUnsafeBytes(of: UInt32(0x7FFF_FFFF).littleEndian) { Data($0) })
        try bytes.write(to: URL(fileURLWithPath: folder + "/" + stream))
        var reader = try EmbeddedTraceReader(path: folder)
        let read = readAll(&reader)
        let error = try #require(read.error)
        #expect(error.description.contains("a sequence of 2147483647 elements runs past the end of the packet"), "\(error)")
        #expect(Self.batches(read.events).isEmpty)
    }
}
