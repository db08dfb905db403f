

/// The embedded recorder's trace format, "rlctl CTF", version 1.
///
/// A trace is a folder that is also a valid CTF 1.8 trace (babeltrace2 and Trace Compass read it):
///
/// ```
/// <trace>/metadata          CTF 1.8 TSDL text: types, clock, the runloop event schema
/// <trace>/stream-<tid>      one binary stream per emitting thread: a sequence of packets
/// ```
///
/// All integers are little-endian and byte-aligned. A packet is:
///
/// | bytes | field |
/// | --- | --- |
/// | 4 | magic `0xC1FC1FC1` |
/// | 16 | trace UUID (the same in every packet and in the metadata) |
/// | 8 | `timestamp_begin` (ns, CLOCK_MONOTONIC) |
/// | 8 | `timestamp_end` |
/// | 8 | `content_size` in bits (header, context and events) |
/// | 8 | `packet_size` in bits (equal to content_size: packets are not padded) |
/// | 8 | `packet_seq_num` (0, 1, 2… per stream; a gap means whole packets were lost) |
/// | 8 | `events_discarded` (events this stream's thread dropped so far, cumulative) |
/// | 4 | `tid` (kernel thread id, signed) |
///
/// followed by events: a 1-byte event id, an 8-byte timestamp, then the event's fields in the order of
/// ``TraceSchema/events`` (`u8`/`u32`/`s32`/`u64`/`s64` integers, NUL-terminated UTF-8 strings).
/// The version is recorded in the metadata's `env` block as `rlctl_trace_format = 1`; a reader refuses other
/// versions.
///
/// Every timestamp is CLOCK_MONOTONIC nanoseconds, non-decreasing within a stream. The recorder may compute
/// them from the TSC (``EmbeddedRecorder/TimestampClock/automatic``) rather than call clock_gettime per event:
/// the values then run ahead of clock_gettime by a few hundred nanoseconds at most, and the recording falls
/// back to clock_gettime if they drift beyond 1 µs. That changes no byte of the format, so the version stays 1.
public enum TraceSchema {
    public static let formatVersion = 1
    public static let magic: UInt32 = 0xC1FC_1FC1
    public static let packetHeaderSize = 4 + 16 + 8 * 6 + 4
    public static let eventHeaderSize = 1 + 8
    /// Mode names and labels longer than this are truncated in traces.
    public static let maxStringBytes = 255

    /// A field's encoding.
    public enum FieldType: Sendable {
        case u8, u32, s32, u64, s64, string
        /// An enumeration stored as `u8`, with its labels for the metadata.
        case enumU8([(String, Int64)])
    }

    public struct EventDescription: Sendable {
        public let id: UInt8
        public let name: String
        public let fields: [(String, FieldType)]
    }

    /// Event ids, as written in each event header.
    public enum EventID: UInt8, CaseIterable, Sendable {
        case entry = 0, beforeTimers, beforeSources, beforeWaiting, afterWaiting, exit
        case runBegin, runEnd, timerFireBegin, timerFireEnd, sourceSignal, sourcePerformBegin, sourcePerformEnd
        case blockBegin, blockEnd, observerBegin, observerEnd, wakeUp, loopCreate, itemLabel

        public static func activity(_ activity: LoopActivity) -> EventID {
            // On the CF activity bits (SchemaValues: entry 1 … exit 128), not on LoopActivity's static members:
            // those are globals of another module, and each comparison with one calls its accessor, on every
            // activity event the recorder writes.
            switch activity.rawValue {
            case 1: return .entry
            case 2: return .beforeTimers
            case 4: return .beforeSources
            case 32: return .beforeWaiting
            case 64: return .afterWaiting
            default: return .exit
            }
        }
    }

    static let activityLabels: [(String, Int64)] = LoopActivity.ordered.map { ($0.description, $0.traceValue) }
    static let resultLabels: [(String, Int64)] = [LoopRunResult.finished, .stopped, .timedOut, .handledSource].map { ($0.description, $0.traceValue) }
    static let reasonLabels: [(String, Int64)] = LoopWakeReason.allCases.map { ($0.description, $0.traceValue) }
    static let sourceKindLabels: [(String, Int64)] = [LoopSourceKind.custom, .descriptor, .port].map { ($0.description, $0.traceValue) }
    static let itemKindLabels: [(String, Int64)] = [LoopItemKind.timer, .source, .descriptor, .port, .observer].map { ($0.description, $0.traceValue) }

    /// Every event, in id order.
    public static let events: [EventDescription] = {
        let place: [(String, FieldType)] = [("loop_id", .u64), ("mode", .string), ("iteration", .u64), ("depth", .u32)]
        let fields: [EventID: (String, [(String, FieldType)])] = [
            .entry: ("entry", place),
            .beforeTimers: ("before_timers", place),
            .beforeSources: ("before_sources", place),
            .beforeWaiting: ("before_waiting", place),
            .afterWaiting: ("after_waiting", place),
            .exit: ("exit", place),
            .runBegin: ("run_begin", [("loop_id", .u64), ("mode", .string), ("timeout_ns", .u64), ("return_after_source_handled", .u8)]),
            .runEnd: ("run_end", [("loop_id", .u64), ("mode", .string), ("result", .enumU8(resultLabels))]),
            .timerFireBegin: ("timer_fire_begin", [("loop_id", .u64), ("timer_id", .u64), ("scheduled_ns", .u64), ("tolerance_ns", .u64), ("interval_ns", .u64), ("missed", .u64)]),
            .timerFireEnd: ("timer_fire_end", [("loop_id", .u64), ("timer_id", .u64)]),
            .sourceSignal: ("source_signal", [("source_id", .u64)]),
            .sourcePerformBegin: ("source_perform_begin", [("loop_id", .u64), ("source_id", .u64), ("kind", .enumU8(sourceKindLabels)), ("order", .s64), ("signaled_ns", .u64)]),
            .sourcePerformEnd: ("source_perform_end", [("loop_id", .u64), ("source_id", .u64)]),
            .blockBegin: ("block_begin", [("loop_id", .u64), ("block_id", .u64), ("enqueued_ns", .u64)]),
            .blockEnd: ("block_end", [("loop_id", .u64), ("block_id", .u64)]),
            .observerBegin: ("observer_begin", [("loop_id", .u64), ("observer_id", .u64), ("activity", .enumU8(activityLabels))]),
            .observerEnd: ("observer_end", [("loop_id", .u64), ("observer_id", .u64)]),
            .wakeUp: ("wakeup", [("loop_id", .u64), ("reason", .enumU8(reasonLabels)), ("slept_ns", .u64)]),
            .loopCreate: ("loop_create", [("loop_id", .u64), ("tid", .s32), ("name", .string)]),
            .itemLabel: ("item_label", [("item_id", .u64), ("kind", .enumU8(itemKindLabels)), ("label", .string)]),
        ]
        return EventID.allCases.map { id in
            let (name, f) = fields[id]!
            return EventDescription(id: id.rawValue, name: name, fields: f)
        }
    }()

    /// The CTF 1.8 metadata for a trace with this UUID and clock offset (realtime − monotonic, in ns).
    public static func metadata(uuid: [UInt8], clockOffsetNanoseconds: Int64, hostname: String) -> String {
        let uuidText = formatUUID(uuid)
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
            uuid = "\(uuidText)";
            byte_order = le;
            packet.header := struct {
                uint32_t magic;
                uint8_t uuid[16];
            };
        };

        env {
            domain = "ust";
            tracer_name = "rlctl-recorder";
            rlctl_trace_format = \(formatVersion);
            hostname = "\(hostname.filter { $0 != "\"" && $0 != "\\" })";
        };

        clock {
            name = "monotonic";
            uuid = "\(uuidText)";
            description = "CLOCK_MONOTONIC";
            freq = 1000000000;
            precision = 1;
            offset_s = \(clockOffsetNanoseconds / 1_000_000_000);
            offset = \(clockOffsetNanoseconds % 1_000_000_000);
            absolute = false;
        };

        typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;

        stream {
            packet.context := struct {
                uint64_clock_monotonic_t timestamp_begin;
                uint64_clock_monotonic_t timestamp_end;
                uint64_t content_size;
                uint64_t packet_size;
                uint64_t packet_seq_num;
                uint64_t events_discarded;
                int32_t tid;
            };
            event.header := struct {
                uint8_t id;
                uint64_clock_monotonic_t timestamp;
            };
        };

        """
        for event in events {
            text += "\nevent {\n    name = \"runloop:\(event.name)\";\n    id = \(event.id);\n    fields := struct {\n"
            for (name, type) in event.fields {
                text += "        \(tsdl(type)) \(name);\n"
            }
            text += "    };\n};\n"
        }
        return text
    }

    private static func tsdl(_ type: FieldType) -> String {
        switch type {
        case .u8: return "uint8_t"
        case .u32: return "uint32_t"
        case .s32: return "int32_t"
        case .u64: return "uint64_t"
        case .s64: return "int64_t"
        case .string: return "string"
        case .enumU8(let labels):
            return "enum : uint8_t { " + labels.map { "\"\($0.0)\" = \($0.1)" }.joined(separator: ", ") + " }"
        }
    }

    static func formatUUID(_ bytes: [UInt8]) -> String {
        let hex = bytes.map { String($0, radix: 16).leftPadded(to: 2) }
        return [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { hex[$0].joined() }.joined(separator: "-")
    }
}

extension String {
    package func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
