import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// Writes small CTF 1.8 traces with `runloop` events by hand, without LTTng: the generic side of
/// `CTFTraceReader` (bare or `runloop:` event names, a packet-context `tid` on one stream and a `vtid` event
/// context on the other, enumerations and plain integers, an unrelated event to skip, discarded events and a
/// lost packet, optionally packetized metadata and LTTng packet index files).
enum CTFTestTrace {
    struct Options {
        /// "" for bare event names (`entry`), "runloop:" for LTTng's.
        var prefix = ""
        var packetizedMetadata = false
        var writeIndex = false
        /// Events dropped before stream 0's second packet (its `events_discarded`).
        var discardedEvents: UInt64 = 0
        /// Skip one `packet_seq_num` before stream 0's third packet (one packet lost).
        var losePacket = false
    }

    /// The thread ids the trace carries: stream 0's packet context, stream 1's event context.
    static let packetThread: Int32 = 4242
    static let contextThread: Int32 = 777
    static let base: UInt64 = 5_000_000_000

    /// Writes the trace into `folder` (created); returns the `runloop` events it holds, in timestamp order.
    @discardableResult
    static func write(to folder: String, _ options: Options = Options()) throws -> [TraceEvent] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let place = { (iteration: UInt64) in TraceEvent.Place(loopID: 3, mode: "kCFRunLoopDefaultMode", iteration: iteration, depth: 1) }
        // Stream 0, in three packets; stream 1 (the signalling thread) interleaved by time.
        let packets: [[TraceEvent.Payload]] = [
            [.loopCreate(loopID: 3, threadID: packetThread, name: "worker"),
             .itemLabel(itemID: 10, kind: .timer, label: "tick"),
             .itemLabel(itemID: 11, kind: .source, label: "work"),
             .itemLabel(itemID: 12, kind: .observer, label: "watch"),
             .runBegin(loopID: 3, mode: "kCFRunLoopDefaultMode", timeoutNanoseconds: 1_000_000_000, returnAfterSourceHandled: true),
             .activity(.entry, place(0)),
             .activity(.beforeTimers, place(1)),
             .activity(.beforeSources, place(1)),
             .observerBegin(loopID: 3, observerID: 12, activity: .beforeWaiting),
             .observerEnd(loopID: 3, observerID: 12)],
            [.activity(.beforeWaiting, place(1)),
             .wakeUp(loopID: 3, reason: .timer, slept: 4_000_000),
             .activity(.afterWaiting, place(1)),
             .timerFireBegin(loopID: 3, timerID: 10, scheduled: base + 10_000, tolerance: 1_000, interval: 5_000_000, missed: 2),
             .timerFireEnd(loopID: 3, timerID: 10),
             .mainQueueBegin(loopID: 3),
             .mainQueueEnd(loopID: 3)],
            [.activity(.beforeTimers, place(2)),
             .activity(.beforeSources, place(2)),
             .sourcePerformBegin(loopID: 3, sourceID: 11, kind: .port, order: -7, signaled: base + 20_000),
             .sourcePerformEnd(loopID: 3, sourceID: 11),
             .blockBegin(loopID: 3, blockID: 99, enqueued: base + 21_000),
             .blockEnd(loopID: 3, blockID: 99),
             .jobBegin(loopID: 3, jobID: 77, enqueued: base + 22_000, priority: 25),
             .jobEnd(loopID: 3, jobID: 77),
             .loopAdapted(loopID: 3, adapter: .nio, groupID: 5),
             .nioTick(loopID: 3, start: base + 23_000, end: base + 24_000, sleep: 900, tasks: 4),
             .itemLabel(itemID: 13, kind: .channel, label: "http 127.0.0.1:8080"),
             .nioIO(loopID: 3, channelID: 13, event: .read, start: base + 24_100, end: base + 24_300),
             .probeFire(loopID: 3, scheduled: base + 24_000, lateness: 500, cost: 80),
             .waitThread(pid: 4242, ppid: 1, thread: "node", process: "node"),
             .waitBegin(call: .epollPwait, target: 13, setSize: 1024, timeout: -1),
             .waitEnd(ready: -1, error: 4),
             .loopStall(.init(loopID: 3, mode: "kCFRunLoopDefaultMode", iteration: 2, start: base + 19_000, busy: 61_000_000,
                              threshold: 50_000_000, culpritKind: .timer, culpritID: 10, culpritDuration: 60_000_000,
                              culpritLabel: "render")),
             .loopHang(loopID: 3, iteration: 2, busy: 2_000_000_000, threshold: 500_000_000),
             .waitBatch(.init(threadID: 4343, waits: [
                 .init(call: .epollWait, target: 5, setSize: 64, timeout: 10_000_000, begin: base + 25_000, end: base + 25_600, ready: 2, error: 0),
                 .init(call: .poll, target: -1, setSize: 3, timeout: -1, begin: base + 25_700, end: nil, ready: 0, error: 0),
             ])),
             .kernelBegin(pid: 4242, command: "demo"),
             .kernelTask(threadID: 4250, pid: 4250, command: "sh"),
             .kernelTimer(threadID: 4242, due: base + 26_000, latest: base + 26_050, fired: base + 26_070),
             .kernelRunQueue(.init(threadID: 4242, cpu: 1, others: 300, culprits: [.init(threadID: 4250, nanoseconds: 1_200)])),
             .kernelOffCPU(.init(threadID: 4242, reason: .sleeping, syscall: 232, left: base + 25_800, woken: base + 26_100,
                                 back: base + 27_600, cpu: 1, wakerThreadID: 0, throttled: 0)),
             .kernelLost(records: 2, from: base + 25_900),
             .activity(.exit, place(2)),
             .runEnd(loopID: 3, mode: "kCFRunLoopDefaultMode", result: .handledSource)],
        ]
        var expected: [TraceEvent] = []
        var time = base
        var streamZero: [[(UInt64, TraceEvent.Payload)]] = []
        var streamOne: [(UInt64, TraceEvent.Payload)] = []
        for (index, packet) in packets.enumerated() {
            var events: [(UInt64, TraceEvent.Payload)] = []
            for payload in packet {
                time += 1_000
                events.append((time, payload))
                expected.append(TraceEvent(timestamp: time, threadID: packetThread, payload: payload))
            }
            streamZero.append(events)
            time += 500
            // The signalling thread signals source 11 between stream 0's packets.
            streamOne.append((time, .sourceSignal(sourceID: 11)))
            expected.append(TraceEvent(timestamp: time, threadID: contextThread, payload: .sourceSignal(sourceID: 11)))
            _ = index
        }
        try Data(metadata(options).utf8).write(to: URL(fileURLWithPath: folder + "/metadata.text"))
        let text = Data(metadata(options).utf8)
        try (options.packetizedMetadata ? packetize(text) : text).write(to: URL(fileURLWithPath: folder + "/metadata"))
        try FileManager.default.removeItem(atPath: folder + "/metadata.text")

        var stream0 = Data(), stream1 = Data()
        var index0: [(UInt64, UInt64)] = [], index1: [(UInt64, UInt64)] = []
        for (number, events) in streamZero.enumerated() {
            let sequence = UInt64(number) + (options.losePacket && number == 2 ? 1 : 0)
            let discarded = number >= 1 ? options.discardedEvents : 0
            let packet = streamZeroPacket(events, sequence: sequence, discarded: discarded, unrelatedEvent: number == 0)
            index0.append((UInt64(stream0.count), UInt64(packet.count)))
            stream0.append(packet)
        }
        let packet1 = streamOnePacket(streamOne)
        index1.append((0, UInt64(packet1.count)))
        stream1.append(packet1)
        try stream0.write(to: URL(fileURLWithPath: folder + "/stream_0"))
        try stream1.write(to: URL(fileURLWithPath: folder + "/stream_1"))
        if options.writeIndex {
            try FileManager.default.createDirectory(atPath: folder + "/index", withIntermediateDirectories: true)
            try indexFile(index0, stream: stream0).write(to: URL(fileURLWithPath: folder + "/index/stream_0.idx"))
            try indexFile(index1, stream: stream1).write(to: URL(fileURLWithPath: folder + "/index/stream_1.idx"))
        }
        return expected.sorted { $0.timestamp < $1.timestamp }
    }

    // ===== metadata =====

    /// Event ids of stream 0: the schema's (stream 1 has `source_signal` only, id 0). The field lists below are
    /// written by hand on purpose: they are another writer's, in another order and with other types, which the
    /// reader must map by name.
    static let eventIDs: [String: UInt32] = Dictionary(uniqueKeysWithValues: TraceSchema.events.map { ($0.name, UInt32($0.id)) })
    /// An event of another provider, after the schema's ids.
    static let unrelatedEventID = UInt32(TraceSchema.events.count)

    static func metadata(_ options: Options) -> String {
        let place = "uint64_t loop_id; string mode; uint64_t iteration; uint32_t depth;"
        let fields: [(String, String)] = [
            ("entry", place), ("before_timers", place), ("before_sources", place), ("before_waiting", place),
            ("after_waiting", place), ("exit", place),
            ("run_begin", "uint64_t loop_id; string mode; uint64_t timeout_ns; uint8_t return_after_source_handled;"),
            ("run_end", "uint64_t loop_id; string mode; enum : uint8_t { finished = 1, stopped = 2, timed_out = 3, handled_source = 4 } result;"),
            ("timer_fire_begin", "uint64_t loop_id; uint64_t timer_id; uint64_t scheduled_ns; uint64_t tolerance_ns; uint64_t interval_ns; uint64_t missed;"),
            ("timer_fire_end", "uint64_t loop_id; uint64_t timer_id;"),
            ("source_perform_begin", "uint64_t loop_id; uint64_t source_id; enum : uint8_t { custom = 0, descriptor = 1, port = 2 } kind; int64_t order; uint64_t signaled_ns;"),
            ("source_perform_end", "uint64_t loop_id; uint64_t source_id;"),
            ("block_begin", "uint64_t loop_id; uint64_t block_id; uint64_t enqueued_ns;"),
            ("block_end", "uint64_t loop_id; uint64_t block_id;"),
            ("observer_begin", "uint64_t loop_id; uint64_t observer_id; uint8_t activity;"),
            ("observer_end", "uint64_t loop_id; uint64_t observer_id;"),
            // Fields in another order than the provider's: the reader maps by name.
            ("wakeup", "uint64_t slept_ns; uint8_t reason; uint64_t loop_id;"),
            ("loop_create", "uint64_t loop_id; int32_t tid; string name;"),
            ("item_label", "uint64_t item_id; enum : uint8_t { timer = 0, source = 1, descriptor = 2, port = 3, observer = 4, channel = 5 } kind; string label;"),
            ("main_queue_begin", "uint64_t loop_id;"),
            ("main_queue_end", "uint64_t loop_id;"),
            ("job_begin", "uint64_t loop_id; uint64_t job_id; uint64_t enqueued_ns; uint8_t priority;"),
            ("job_end", "uint64_t loop_id; uint64_t job_id;"),
            ("loop_adapted", "uint64_t loop_id; enum : uint8_t { foundation = 1, nio = 2 } adapter; uint64_t group_id;"),
            ("nio_tick", "uint64_t loop_id; uint64_t start_ns; uint64_t end_ns; uint64_t sleep_ns; uint64_t tasks;"),
            ("nio_io", "uint64_t loop_id; uint64_t channel_id; uint8_t io; uint64_t start_ns; uint64_t end_ns;"),
            ("probe_fire", "uint64_t loop_id; uint64_t scheduled_ns; uint64_t lateness_ns; uint64_t cost_ns;"),
            ("wait_begin", "enum : uint8_t { epoll_wait = 0, epoll_pwait = 1, epoll_pwait2 = 2, poll = 3, ppoll = 4, select = 5, pselect = 6 } call; int32_t target; uint32_t set_size; int64_t timeout_ns;"),
            ("wait_end", "int32_t ready; int32_t error;"),
            ("wait_thread", "int32_t pid; int32_t ppid; string thread; string process;"),
            ("loop_stall", "uint64_t loop_id; string mode; uint64_t iteration; uint64_t start_ns; uint64_t busy_ns; uint64_t threshold_ns; enum : uint8_t { none = 0, timer = 1, source = 2, descriptor = 3, port = 4, observer = 5, block = 6, main_queue = 7, job = 8 } culprit_kind; uint64_t culprit_id; uint64_t culprit_ns; string culprit_label;"),
            ("loop_hang", "uint64_t loop_id; uint64_t iteration; uint64_t busy_ns; uint64_t threshold_ns;"),
            // Arrays as sequences with lengths of their own, as LTTng-UST writes them, its fields in another order.
            ("wait_batch", "uint32_t waits; int32_t tid; "
             + [("uint64_t", "begin_ns"), ("uint64_t", "end_ns"), ("uint8_t", "call"), ("int32_t", "target"), ("uint32_t", "set_size"),
                ("int64_t", "timeout_ns"), ("int32_t", "ready"), ("int32_t", "error")]
                .map { "uint32_t _\($0.1)_length; \($0.0) \($0.1)[_\($0.1)_length];" }.joined(separator: " ")),
            ("kernel_begin", "int32_t pid; string command;"),
            ("kernel_task", "int32_t tid; int32_t pid; string command;"),
            ("kernel_timer", "int32_t tid; uint64_t due_ns; uint64_t latest_ns; uint64_t fired_ns;"),
            ("kernel_run_queue", "int32_t tid; int32_t cpu; uint64_t others_ns; uint32_t culprits; "
             + "uint32_t _culprit_tid_length; int32_t culprit_tid[_culprit_tid_length]; uint32_t _culprit_ns_length; uint64_t culprit_ns[_culprit_ns_length];"),
            ("kernel_off_cpu", "int32_t tid; enum : uint8_t { preempted = 0, throttled = 1, sleeping = 2, disk_sleep = 3, other = 4 } reason; int32_t syscall; "
             + "uint64_t left_ns; uint64_t woken_ns; uint64_t back_ns; int32_t cpu; int32_t waker_tid; uint64_t throttled_ns;"),
            ("kernel_lost", "uint64_t records; uint64_t from_ns;"),
        ]
        var text = """
        /* CTF 1.8 */

        typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
        typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
        typealias integer { size = 32; align = 8; signed = true; } := int32_t;
        typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
        typealias integer { size = 64; align = 8; signed = true; } := int64_t;

        trace {
            major = 1;
            minor = 8;
            byte_order = le;
            packet.header := struct { uint32_t magic; uint32_t stream_id; };
        };

        clock {
            name = "monotonic";
            freq = 1000000000;
            offset_s = 1700000000;
        };

        typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;

        stream {
            id = 0;
            packet.context := struct {
                uint64_clock_monotonic_t timestamp_begin;
                uint64_clock_monotonic_t timestamp_end;
                uint64_t content_size;
                uint64_t packet_size;
                uint64_t packet_seq_num;
                uint64_t events_discarded;
                int32_t tid;
            };
            event.header := struct { uint32_t id; uint64_clock_monotonic_t timestamp; };
        };

        stream {
            id = 1;
            packet.context := struct {
                uint64_clock_monotonic_t timestamp_begin;
                uint64_clock_monotonic_t timestamp_end;
                uint64_t content_size;
                uint64_t packet_size;
            };
            event.header := struct { uint32_t id; uint64_clock_monotonic_t timestamp; };
            event.context := struct { int32_t vtid; };
        };

        """
        for (name, body) in fields {
            text += "\nevent {\n    name = \"\(options.prefix)\(name)\";\n    id = \(eventIDs[name]!);\n    stream_id = 0;\n    fields := struct { \(body) };\n};\n"
        }
        text += "\nevent {\n    name = \"other:unrelated\";\n    id = \(unrelatedEventID);\n    stream_id = 0;\n    fields := struct { uint64_t loop_id; };\n};\n"
        text += "\nevent {\n    name = \"\(options.prefix)source_signal\";\n    id = 0;\n    stream_id = 1;\n    fields := struct { uint64_t source_id; };\n};\n"
        return text
    }

    /// Packetized metadata, as LTTng writes it: 37-byte headers, here in 1 KiB packets.
    static let metadataPacketSize = 1024

    static func packetize(_ text: Data) -> Data {
        var out = Data()
        let packetSize = metadataPacketSize
        let chunk = packetSize - 37
        var offset = 0
        while offset < text.count {
            let piece = text[text.startIndex + offset ..< text.startIndex + min(offset + chunk, text.count)]
            let contentBits = UInt32((37 + piece.count) * 8)
            var header = Data()
            header.appendLE(UInt32(0x75D1_1D57))
            header.append(Data(repeating: 0xAB, count: 16))
            header.appendLE(UInt32(0))
            header.appendLE(contentBits)
            header.appendLE(UInt32(packetSize * 8))
            header.append(contentsOf: [0, 0, 0, 1, 8])
            out.append(header)
            out.append(piece)
            out.append(Data(repeating: 0, count: packetSize - 37 - piece.count))
            offset += piece.count
        }
        return out
    }

    // ===== streams =====

    private static func streamZeroPacket(_ events: [(UInt64, TraceEvent.Payload)], sequence: UInt64, discarded: UInt64,
                                         unrelatedEvent: Bool) -> Data {
        var body = Data()
        for (time, payload) in events {
            let name = payload.eventName
            body.appendLE(eventIDs[name]!)
            body.appendLE(time)
            body.append(fields(payload))
            if unrelatedEvent && name == "entry" {
                body.appendLE(unrelatedEventID)
                body.appendLE(time)
                body.appendLE(UInt64(3))
            }
        }
        var context = Data()
        let size = UInt64((8 + 52 + body.count) * 8)
        context.appendLE(events.first!.0 - 100)
        context.appendLE(events.last!.0 + 100)
        context.appendLE(size)
        context.appendLE(size)
        context.appendLE(sequence)
        context.appendLE(discarded)
        context.appendLE(packetThread)
        return header(stream: 0) + context + body
    }

    private static func streamOnePacket(_ events: [(UInt64, TraceEvent.Payload)]) -> Data {
        var body = Data()
        for (time, payload) in events {
            body.appendLE(UInt32(0))
            body.appendLE(time)
            body.appendLE(contextThread)
            body.append(fields(payload))
        }
        var context = Data()
        let size = UInt64((8 + 32 + body.count) * 8)
        context.appendLE(events.first!.0 - 100)
        context.appendLE(events.last!.0 + 100)
        context.appendLE(size)
        context.appendLE(size)
        return header(stream: 1) + context + body
    }

    private static func header(stream: UInt32) -> Data {
        var data = Data()
        data.appendLE(UInt32(0xC1FC_1FC1))
        data.appendLE(stream)
        return data
    }

    /// A payload's fields as the metadata above declares them.
    private static func fields(_ payload: TraceEvent.Payload) -> Data {
        var data = Data()
        func string(_ text: String) { data.append(Data(text.utf8)); data.append(0) }
        switch payload {
        case .activity(_, let place):
            data.appendLE(place.loopID); string(place.mode); data.appendLE(place.iteration); data.appendLE(place.depth)
        case .runBegin(let loop, let mode, let timeout, let returnAfter):
            data.appendLE(loop); string(mode); data.appendLE(timeout); data.append(returnAfter ? 1 : 0)
        case .runEnd(let loop, let mode, let result):
            data.appendLE(loop); string(mode); data.append(UInt8(result.traceValue))
        case .timerFireBegin(let loop, let timer, let scheduled, let tolerance, let interval, let missed):
            for value in [loop, timer, scheduled, tolerance, interval, missed] { data.appendLE(value) }
        case .timerFireEnd(let loop, let timer):
            data.appendLE(loop); data.appendLE(timer)
        case .sourceSignal(let source):
            data.appendLE(source)
        case .sourcePerformBegin(let loop, let source, let kind, let order, let signaled):
            data.appendLE(loop); data.appendLE(source); data.append(kind.rawValue); data.appendLE(order); data.appendLE(signaled)
        case .sourcePerformEnd(let loop, let source):
            data.appendLE(loop); data.appendLE(source)
        case .blockBegin(let loop, let block, let enqueued):
            data.appendLE(loop); data.appendLE(block); data.appendLE(enqueued)
        case .blockEnd(let loop, let block):
            data.appendLE(loop); data.appendLE(block)
        case .observerBegin(let loop, let observer, let activity):
            data.appendLE(loop); data.appendLE(observer); data.append(UInt8(activity.rawValue))
        case .observerEnd(let loop, let observer):
            data.appendLE(loop); data.appendLE(observer)
        case .wakeUp(let loop, let reason, let slept):
            data.appendLE(slept); data.append(reason.rawValue); data.appendLE(loop)
        case .loopCreate(let loop, let tid, let name):
            data.appendLE(loop); data.appendLE(tid); string(name)
        case .itemLabel(let item, let kind, let label):
            data.appendLE(item); data.append(kind.rawValue); string(label)
        case .mainQueueBegin(let loop), .mainQueueEnd(let loop):
            data.appendLE(loop)
        case .jobBegin(let loop, let job, let enqueued, let priority):
            data.appendLE(loop); data.appendLE(job); data.appendLE(enqueued); data.append(priority)
        case .jobEnd(let loop, let job):
            data.appendLE(loop); data.appendLE(job)
        case .loopAdapted(let loop, let adapter, let group):
            data.appendLE(loop); data.append(adapter.rawValue); data.appendLE(group)
        case .nioTick(let loop, let start, let end, let sleep, let tasks):
            for value in [loop, start, end, sleep, tasks] { data.appendLE(value) }
        case .nioIO(let loop, let channel, let event, let start, let end):
            data.appendLE(loop); data.appendLE(channel); data.append(event.rawValue); data.appendLE(start); data.appendLE(end)
        case .probeFire(let loop, let scheduled, let lateness, let cost):
            for value in [loop, scheduled, lateness, cost] { data.appendLE(value) }
        case .waitBegin(let call, let target, let setSize, let timeout):
            data.append(call.rawValue); data.appendLE(target); data.appendLE(setSize); data.appendLE(timeout)
        case .waitEnd(let ready, let error):
            data.appendLE(ready); data.appendLE(error)
        case .waitThread(let pid, let ppid, let thread, let process):
            data.appendLE(pid); data.appendLE(ppid); string(thread); string(process)
        case .loopStall(let s):
            data.appendLE(s.loopID); string(s.mode)
            for value in [s.iteration, s.start, s.busy, s.threshold] { data.appendLE(value) }
            data.append(s.culpritKind.rawValue); data.appendLE(s.culpritID); data.appendLE(s.culpritDuration); string(s.culpritLabel)
        case .loopHang(let loop, let iteration, let busy, let threshold):
            for value in [loop, iteration, busy, threshold] { data.appendLE(value) }
        case .waitBatch(let batch):
            let waits = batch.waits
            data.appendLE(UInt32(waits.count)); data.appendLE(batch.threadID)
            func array<T: FixedWidthInteger>(_ values: [T]) { data.appendLE(UInt32(values.count)); for value in values { data.appendLE(value) } }
            array(waits.map(\.begin)); array(waits.map { $0.end ?? 0 }); array(waits.map(\.call.rawValue)); array(waits.map(\.target))
            array(waits.map(\.setSize)); array(waits.map(\.timeout)); array(waits.map(\.ready)); array(waits.map(\.error))
        case .kernelBegin(let pid, let command):
            data.appendLE(pid); string(command)
        case .kernelTask(let tid, let pid, let command):
            data.appendLE(tid); data.appendLE(pid); string(command)
        case .kernelTimer(let tid, let due, let latest, let fired):
            data.appendLE(tid); for value in [due, latest, fired] { data.appendLE(value) }
        case .kernelRunQueue(let queue):
            data.appendLE(queue.threadID); data.appendLE(queue.cpu); data.appendLE(queue.others); data.appendLE(UInt32(queue.culprits.count))
            data.appendLE(UInt32(queue.culprits.count)); for culprit in queue.culprits { data.appendLE(culprit.threadID) }
            data.appendLE(UInt32(queue.culprits.count)); for culprit in queue.culprits { data.appendLE(culprit.nanoseconds) }
        case .kernelOffCPU(let off):
            data.appendLE(off.threadID); data.append(off.reason.rawValue); data.appendLE(off.syscall)
            for value in [off.left, off.woken, off.back] { data.appendLE(value) }
            data.appendLE(off.cpu); data.appendLE(off.wakerThreadID); data.appendLE(off.throttled)
        case .kernelLost(let records, let from):
            data.appendLE(records); data.appendLE(from)
        }
        return data
    }

    /// An LTTng packet index (CTF index 1.0, big-endian).
    private static func indexFile(_ packets: [(offset: UInt64, size: UInt64)], stream: Data) -> Data {
        var data = Data()
        data.appendBE(UInt32(0xC1F1_DCC1))
        data.appendBE(UInt32(1))
        data.appendBE(UInt32(0))
        data.appendBE(UInt32(56))
        for (offset, size) in packets {
            let context = stream.subdata(in: Int(offset) + 8 ..< Int(offset) + 24)
            data.appendBE(offset)
            data.appendBE(size * 8)
            data.appendBE(size * 8)
            data.append(Data(context[context.startIndex ..< context.startIndex + 8].reversed()))   // timestamp_begin
            data.append(Data(context[context.startIndex + 8 ..< context.startIndex + 16].reversed()))   // timestamp_end
            data.appendBE(UInt64(0))
            data.appendBE(UInt64(0))
        }
        return data
    }
}

extension Data {
    mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    mutating func appendBE<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}

/// Random byte flips and truncations of a trace folder's files, each read with `CTFTraceReader`.
enum CTFMutationFuzzer {
    struct Outcome {
        var read = 0
        var failed = 0
        /// Errors whose path is not a file or folder of the mutated trace.
        var unnamedErrors: [String] = []
        /// Each mutation and its result, for the failure message.
        var log: [String] = []
    }


    static func run(trace: String, mutations: Int, seed: UInt64) throws -> Outcome {
        let fileManager = FileManager.default
        let files = (fileManager.enumerator(atPath: trace)?.allObjects as? [String] ?? [])
            .filter { CTFTestFiles.isRegularFile(trace + "/" + $0) }
            .sorted()
        precondition(!files.isEmpty, "no files in \(trace)")
        let metadata = files.filter { $0 == "metadata" }
        let indexes = files.filter { $0.hasPrefix("index/") }
        let streams = files.filter { $0 != "metadata" && !$0.hasPrefix("index/") }
        var random = SplitMix(seed: seed)   // deterministic, so a failing seed can be replayed
        var outcome = Outcome()
        let scratch = NSTemporaryDirectory() + "rlctl-ctf-fuzz-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? fileManager.removeItem(atPath: scratch) }
        for round in 0..<mutations {
            try? fileManager.removeItem(atPath: scratch)
            try fileManager.copyItem(atPath: trace, toPath: scratch)
            let roll = Int.random(in: 0..<10, using: &random)
            let pool = roll < 3 ? metadata : (roll < 5 && !indexes.isEmpty ? indexes : streams)
            let file = pool.isEmpty ? files[0] : pool[Int.random(in: 0..<pool.count, using: &random)]
            let path = scratch + "/" + file
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            var what = ""
            if bytes.isEmpty {
                bytes = [UInt8.random(in: 0...255, using: &random)]
                what = "filled \(file)"
            } else if Int.random(in: 0..<100, using: &random) < 15 {
                let cut = Int.random(in: 0..<bytes.count, using: &random)
                bytes.removeSubrange(cut...)
                what = "truncated \(file) at \(cut)"
            } else {
                var flipped: [Int] = []
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    let at = Int.random(in: 0..<bytes.count, using: &random)
                    bytes[at] = UInt8.random(in: 0...255, using: &random)
                    flipped.append(at)
                }
                what = "changed \(file) at \(flipped)"
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            do {
                let reader = try CTFTraceReader(path: scratch, stallTimeout: .seconds(20))
                var count = 0
                while try reader.next() != nil { count += 1 }
                outcome.read += 1
                outcome.log.append("\(round): \(what): \(count) events")
            } catch {
                outcome.failed += 1
                outcome.log.append("\(round): \(what): \(error)")
                if !(error.path == scratch || error.path.hasPrefix(scratch + "/")) || error.reason.isEmpty {
                    outcome.unnamedErrors.append("\(what): \(error)")
                }
            }
        }
        return outcome
    }
}

enum CTFTestFiles {
    static func isRegularFile(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
    }

    /// A fresh folder path under the temporary directory (not created).
    static func scratchFolder(_ name: String) -> String {
        NSTemporaryDirectory() + "rlctl-ctf-tests/\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }
}
