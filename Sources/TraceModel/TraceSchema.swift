internal import CTraceSchema

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
/// followed by events: a 1-byte event id, an 8-byte timestamp, then the event's fields in the order the trace's
/// own `metadata` declares them (`u8`/`u32`/`s32`/`u64`/`s64` integers, NUL-terminated UTF-8 strings, and arrays of
/// integers as a `u32` element count followed by the elements, as LTTng-UST writes a sequence). The
/// recorder writes ``TraceSchema/events``, which is built from the schema's one definition,
/// `Sources/CTraceSchema/include/runloop_events.def` (the C table expanded from it); a reader decodes by the
/// trace's metadata, so a trace with fields or events it does not know is still read: unknown fields are
/// skipped by their declared type, unknown events by their declared fields (and counted in
/// ``TraceHealth/eventsSkipped``). Adding a field or an event therefore keeps the version at 1.
/// The version is recorded in the metadata's `env` block as `rlctl_trace_format = 1`; a reader refuses other
/// versions (a new version means a change older readers cannot skip: the header, the packet layout, a type).
///
/// Every timestamp is CLOCK_MONOTONIC nanoseconds, non-decreasing within a stream. The recorder may compute
/// them from the TSC (``EmbeddedRecorder/TimestampClock/automatic``) rather than call clock_gettime per event:
/// the values then run ahead of clock_gettime by a few hundred nanoseconds at most, and the recording falls
/// back to clock_gettime if they drift beyond 1 µs. That changes no byte of the format, so the version stays 1.
public enum TraceSchema {
    public static let formatVersion = 1
    /// The file a recording writes last, once every packet is in its stream file: a trace whose metadata names it
    /// (`rlctl_end_file` in `env`) and that lacks it was cut off (its process killed or crashed). Traces written
    /// before it existed name none and are read as they always were. Hidden, because babeltrace2 takes every other
    /// file of the folder for a stream.
    public static let endFileName = ".end"
    /// The empty file a recording leaves instead of its end file when it could not write its trace:
    /// `.write-failed-28` for errno 28 (ENOSPC). Empty, so that it can be made on a full disk.
    public static func writeFailureMarker(errno: Int32) -> String { writeFailurePrefix + "\(errno)" }
    public static let writeFailurePrefix = ".write-failed-"
    public static let magic: UInt32 = 0xC1FC_1FC1
    public static let packetHeaderSize = 4 + 16 + 8 * 6 + 4
    public static let eventHeaderSize = 1 + 8
    /// Mode names and labels longer than this are truncated in traces.
    public static let maxStringBytes = 255
    /// Event names for a message: the first few, then how many more.
    public static func someNames(_ names: [String]) -> String {
        names.count <= 4 ? names.joined(separator: ", ") : names.prefix(3).joined(separator: ", ") + " and \(names.count - 3) more"
    }

    /// The deepest run nesting a trace may report. Readers refuse a deeper one as corruption: the summaries keep a
    /// frame for each open run, and a depth read from a damaged file must not size memory (a real program's stack
    /// ends far sooner: each nested run holds its callers' frames).
    public static let maxRunDepth: UInt64 = 1000

    /// An enumeration's labels and values (stored as `u8`).
    public struct Enumeration: Sendable, Equatable {
        public let name: String
        public let labels: [Label]

        public struct Label: Sendable, Equatable {
            public let label: String
            public let value: Int64
        }
    }

    /// A field's encoding.
    public indirect enum FieldType: Sendable, Equatable {
        case u8, u32, s32, u64, s64, string
        /// An enumeration stored as `u8`.
        case enumeration(Enumeration)
        /// A sequence of integers of the element type, as many as an earlier `u32` field of the event says
        /// (`RL_ARRAY_FIELD`); in a trace, its own `u32` count and then the elements.
        case array(FieldType)

        /// Bytes in a trace, nil for strings and arrays.
        public var fixedSize: Int? {
            switch self {
            case .u8, .enumeration: return 1
            case .u32, .s32: return 4
            case .u64, .s64: return 8
            case .string, .array: return nil
            }
        }
    }

    public struct Field: Sendable, Equatable {
        public let name: String
        public let type: FieldType
    }

    public struct EventDescription: Sendable, Equatable {
        public let id: UInt8
        public let name: String
        /// The event class it shares its fields with (LTTng's `activity` class of the six activities), if any.
        public let eventClass: String?
        public let fields: [Field]

        /// The index of the field called `name`, if the event has one.
        public func fieldIndex(_ name: String) -> Int? { fields.firstIndex { $0.name == name } }
    }

    /// Event ids, as written in each event header: the names of runloop_events.def's ids, for Swift code
    /// (SchemaDefinitionTests fails when these disagree with the definition).
    public enum EventID: UInt8, CaseIterable, Sendable {
        case entry = 0, beforeTimers, beforeSources, beforeWaiting, afterWaiting, exit
        case runBegin, runEnd, timerFireBegin, timerFireEnd, sourceSignal, sourcePerformBegin, sourcePerformEnd
        case blockBegin, blockEnd, observerBegin, observerEnd, wakeUp, loopCreate, itemLabel
        case mainQueueBegin, mainQueueEnd, jobBegin, jobEnd
        case loopAdapted, nioTick, nioIO, probeFire
        case waitBegin, waitEnd, waitThread
        case loopStall, loopHang
        case waitBatch
        case kernelBegin, kernelTask, kernelTimer, kernelRunQueue, kernelOffCPU, kernelLost

        // Inlinable: the recorder calls this for every activity event it writes, from another module.
        @inlinable
        public static func activity(_ activity: LoopActivity) -> EventID {
            // On the CF activity bits (TraceValues: entry 1 … exit 128), not on LoopActivity's static members:
            // a comparison with one of those would call its accessor.
            switch activity.rawValue {
            case 1: return .entry
            case 2: return .beforeTimers
            case 4: return .beforeSources
            case 32: return .beforeWaiting
            case 64: return .afterWaiting
            default: return .exit
            }
        }

        /// The event's description in the schema.
        public var description: EventDescription { TraceSchema.events[Int(rawValue)] }
    }

    /// Every enumeration of the schema, in definition order.
    public static let enumerations: [Enumeration] = (0..<rl_schema_enum_count).map { index in
        let table = rl_schema_enum_at(index)!.pointee
        let labels = (0..<Int(table.label_count)).map { label in
            Enumeration.Label(label: String(cString: table.labels[label].label), value: table.labels[label].value)
        }
        return Enumeration(name: String(cString: table.name), labels: labels)
    }

    /// Every event, in id order: the schema table (runloop_events.def) as Swift values.
    public static let events: [EventDescription] = (0..<rl_schema_event_count).map { index in
        let table = rl_schema_event_at(index)!.pointee
        let fields = (0..<Int(table.field_count)).map { position in
            let field = table.fields[position]
            var type: FieldType
            switch field.type {
            case RL_TYPE_U8: type = .u8
            case RL_TYPE_U32: type = .u32
            case RL_TYPE_S32: type = .s32
            case RL_TYPE_U64: type = .u64
            case RL_TYPE_S64: type = .s64
            case RL_TYPE_STRING: type = .string
            default: type = .enumeration(enumerations[Int(field.enumeration)])
            }
            if field.length != nil { type = .array(type) }
            return Field(name: String(cString: field.name), type: type)
        }
        return EventDescription(id: UInt8(table.id), name: String(cString: table.name),
                                eventClass: table.event_class.map { String(cString: $0) }, fields: fields)
    }

    /// The most fields any event has.
    public static var maxFieldCount: Int { Int(rl_schema_max_fields()) }

    /// The folder inside a trace folder (an embedded trace, or an LTTng output folder) that holds its kernel view: a
    /// trace of its own in this format, written by rlctl's kernel recorder, whose events the readers merge with the
    /// trace's by time.
    /// Not `kernel/`, which is where LTTng writes a session's kernel-domain trace.
    public static let kernelViewFolder = "rlctl-kernel"
    /// What a kernel view's metadata says it is (`rlctl_trace_part` in `env`): a part of the trace around it, never a
    /// trace (a host, a session) of its own.
    public static let kernelViewPart = "kernel"
    /// The folder inside a `record --any` trace folder that holds the wait calls the kernel recorded, for the
    /// processes the wait interposer could not reach (a static program, one that cleared its environment): a trace
    /// of its own (`wait_thread` and `wait_batch` events) whose events are the loops' as much as the trace's are.
    public static let kernelWaitsFolder = "rlctl-kernel-waits"
    /// What its metadata says it is (`rlctl_trace_part`).
    public static let kernelWaitsPart = "kernel-waits"

    /// The CTF 1.8 metadata for a trace with this UUID and clock offset (realtime − monotonic, in ns); `part`: for a
    /// trace that is part of another (``kernelViewPart``), said in `env` as `rlctl_trace_part`.
    ///
    /// The clock is declared `absolute`: its offset makes it the wall clock, so babeltrace2 merges an rlctl trace
    /// with its kernel view and with LTTng traces (its muxer refuses to mix a non-absolute clock with another
    /// trace's unless their clock uuids agree, and the kernel view cannot know the uuid of a trace another process
    /// writes).
    public static func metadata(uuid: [UInt8], clockOffsetNanoseconds: Int64, hostname: String, part: String? = nil) -> String {
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
            rlctl_end_file = "\(endFileName)";
            hostname = "\(hostname.filter { $0 != "\"" && $0 != "\\" })";\(part.map { "\n    rlctl_trace_part = \"\($0)\";" } ?? "")
        };

        clock {
            name = "monotonic";
            uuid = "\(uuidText)";
            description = "CLOCK_MONOTONIC";
            freq = 1000000000;
            precision = 1;
            offset_s = \(clockOffsetNanoseconds / 1_000_000_000);
            offset = \(clockOffsetNanoseconds % 1_000_000_000);
            absolute = true;
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
            for field in event.fields {
                if case .array(let element) = field.type {
                    // As LTTng-UST declares a sequence: a count of its own, which babeltrace2 keeps out of the payload.
                    text += "        uint32_t _\(field.name)_length;\n        \(tsdl(element)) \(field.name)[_\(field.name)_length];\n"
                } else {
                    text += "        \(tsdl(field.type)) \(field.name);\n"
                }
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
        case .enumeration(let enumeration):
            return "enum : uint8_t { " + enumeration.labels.map { "\"\($0.label)\" = \($0.value)" }.joined(separator: ", ") + " }"
        case .array(let element):
            return tsdl(element)   // the metadata writes the brackets
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
