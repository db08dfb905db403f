import Foundation
import RunLoopCore
import Testing
@testable import TraceReading
import Tracing

/// The guard of the schema's one definition (Sources/CTraceSchema/include/runloop_events.def): every consumer
/// that is not expanded from it by the C preprocessor is checked against it here. (The recorder's encoders, the
/// LTTng provider and the CTF reader's field lookup are expanded from it, so they cannot disagree; the LTTng
/// provider's output is checked by LTTngRoundTripTests.theProvidersMetadataIsTheDefinition.)
@Suite struct SchemaDefinitionTests {
    /// The names of runloop_events.def, in id order, as Swift names them.
    static let swiftNames: [TraceSchema.EventID: String] = [
        .entry: "entry", .beforeTimers: "before_timers", .beforeSources: "before_sources",
        .beforeWaiting: "before_waiting", .afterWaiting: "after_waiting", .exit: "exit", .runBegin: "run_begin",
        .runEnd: "run_end", .timerFireBegin: "timer_fire_begin", .timerFireEnd: "timer_fire_end",
        .sourceSignal: "source_signal", .sourcePerformBegin: "source_perform_begin", .sourcePerformEnd: "source_perform_end",
        .blockBegin: "block_begin", .blockEnd: "block_end", .observerBegin: "observer_begin", .observerEnd: "observer_end",
        .wakeUp: "wakeup", .loopCreate: "loop_create", .itemLabel: "item_label",
        .mainQueueBegin: "main_queue_begin", .mainQueueEnd: "main_queue_end",
        .jobBegin: "job_begin", .jobEnd: "job_end",
        .loopAdapted: "loop_adapted", .nioTick: "nio_tick", .nioIO: "nio_io", .probeFire: "probe_fire",
        .waitBegin: "wait_begin", .waitEnd: "wait_end", .waitThread: "wait_thread",
        .loopStall: "loop_stall", .loopHang: "loop_hang", .waitBatch: "wait_batch",
        .kernelBegin: "kernel_begin", .kernelTask: "kernel_task", .kernelTimer: "kernel_timer",
        .kernelRunQueue: "kernel_run_queue", .kernelOffCPU: "kernel_off_cpu", .kernelLost: "kernel_lost",
    ]

    @Test func swiftEventIDsAreTheDefinitionsIDs() {
        #expect(TraceSchema.EventID.allCases.count == TraceSchema.events.count)
        for (index, event) in TraceSchema.events.enumerated() {
            #expect(Int(event.id) == index, "ids run from 0 without gaps")
            let id = TraceSchema.EventID(rawValue: event.id)
            #expect(id != nil, "runloop_events.def has event \(event.name) (id \(event.id)), TraceSchema.EventID has no case for it")
            if let id { #expect(Self.swiftNames[id] == event.name, "EventID.\(id) is \(event.name) in runloop_events.def") }
        }
    }

    /// What the model decodes each event into names the same event: TraceEvent.Payload's names are the table's.
    @Test func decodedEventsAreNamedAsTheDefinitionNamesThem() throws {
        for event in TraceSchema.events {
            struct Zeros: SchemaFieldValues {
                let event: TraceSchema.EventDescription
                func integer(_ field: Int) -> UInt64 {
                    // The lowest valid value of each enumeration, so that every event decodes.
                    if case .enumeration(let enumeration) = event.fields[field].type { return UInt64(enumeration.labels[0].value) }
                    return 0
                }
                func string(_ field: Int) -> String { event.fields[field].name }
                // Arrays are empty (their length fields are 0).
                func count(_ field: Int) -> Int { 0 }
                func element(_ field: Int, _ index: Int) -> UInt64 { 0 }
            }
            var values = Zeros(event: event)
            let payload = try TraceEventDecoding.payload(TraceSchema.EventID(rawValue: event.id)!, &values)
            #expect(payload.eventName == event.name)
        }
    }

    /// The enumerations' labels and values are those of the Swift vocabulary (TraceValues.swift).
    @Test func enumerationsAreTheVocabularysTraceValues() {
        func labels(_ name: String) -> [String: Int64] {
            Dictionary(uniqueKeysWithValues: TraceSchema.enumerations.first { $0.name == name }!.labels.map { ($0.label, $0.value) })
        }
        #expect(TraceSchema.enumerations.map(\.name) == ["activity", "run_result", "wake_reason", "source_kind", "item_kind",
                                                          "loop_adapter", "nio_io_event", "wait_call", "callout_kind", "off_cpu_reason"])
        #expect(labels("activity") == Dictionary(uniqueKeysWithValues: Loop.Activity.ordered.map { ($0.description, $0.traceValue) }))
        #expect(labels("run_result") == Dictionary(uniqueKeysWithValues: [Loop.RunResult.finished, .stopped, .timedOut, .handledSource].map { ($0.description, $0.traceValue) }))
        #expect(labels("wake_reason") == Dictionary(uniqueKeysWithValues: Loop.WakeReason.allCases.map { ($0.description, $0.traceValue) }))
        #expect(labels("source_kind") == Dictionary(uniqueKeysWithValues: [LoopEventSink.SourceKind.custom, .descriptor, .port].map { ($0.description, $0.traceValue) }))
        #expect(labels("item_kind") == Dictionary(uniqueKeysWithValues: [LoopEventSink.ItemKind.timer, .source, .descriptor, .port, .observer, .channel].map { ($0.description, $0.traceValue) }))
        #expect(labels("loop_adapter") == Dictionary(uniqueKeysWithValues: LoopEventSink.Adapter.allCases.map { ($0.description, $0.traceValue) }))
        #expect(labels("nio_io_event") == Dictionary(uniqueKeysWithValues: LoopEventSink.NIOEvent.allCases.map { ($0.description, $0.traceValue) }))
        #expect(labels("wait_call") == Dictionary(uniqueKeysWithValues: WaitCall.allCases.map { ($0.description, $0.traceValue) }))
        #expect(labels("callout_kind") == Dictionary(uniqueKeysWithValues: LoopCalloutKind.allCases.map { ($0.description, $0.traceValue) }))
        #expect(labels("off_cpu_reason") == Dictionary(uniqueKeysWithValues: KernelOffCPUReason.allCases.map { ($0.description, $0.traceValue) }))
    }

    /// A field named like a TSDL keyword (`event`, `stream`…) makes every CTF metadata that declares it
    /// unreadable to babeltrace2: the embedded recorder's and the hand-written test traces' alike.
    @Test func noFieldIsNamedLikeATSDLKeyword() {
        let keywords: Set<String> = ["align", "callsite", "const", "char", "clock", "double", "enum", "env", "event",
                                     "floating_point", "float", "integer", "int", "long", "short", "signed", "stream",
                                     "string", "struct", "trace", "typealias", "typedef", "unsigned", "variant", "void",
                                     "_Bool", "_Complex", "_Imaginary"]
        for event in TraceSchema.events {
            for field in event.fields { #expect(!keywords.contains(field.name), "\(event.name).\(field.name) is a TSDL keyword") }
        }
    }

    /// The TSDL the recorder writes declares exactly the table's events, fields and types, in order.
    @Test func theRecordersMetadataIsTheDefinition() throws {
        let text = TraceSchema.metadata(uuid: Array(repeating: 7, count: 16), clockOffsetNanoseconds: 0, hostname: "h")
        let declared = try TraceMetadataEvents(parsing: text, path: "metadata").events
        #expect(declared.map(\.id) == TraceSchema.events.map { Int($0.id) })
        #expect(declared.map(\.name) == TraceSchema.events.map(\.name))
        for (event, schema) in zip(declared, TraceSchema.events) {
            #expect(event.problem == nil)
            #expect(event.fields == Self.declaredFields(schema), "fields of \(schema.name)")
        }
        // Enumerations carry their labels.
        #expect(text.contains("enum : uint8_t { \"timer\" = 0, \"source\" = 1, \"descriptor\" = 2, \"port\" = 3, \"manual\" = 4, \"timeout\" = 5, \"stop\" = 6, \"main_queue\" = 7 } reason;"))
    }

    /// How a CTF metadata declares the event's fields: an array comes after a u32 count of its own, as LTTng-UST
    /// declares a sequence.
    static func declaredFields(_ schema: TraceSchema.EventDescription) -> [TraceMetadataEvents.DeclaredField] {
        var fields: [TraceMetadataEvents.DeclaredField] = []
        for field in schema.fields {
            if case .array(let element) = field.type, case .integer(let bytes, let signed) = declaredType(element) {
                fields.append(.init(name: "_\(field.name)_length", type: .integer(bytes: 4, signed: false)))
                fields.append(.init(name: field.name, type: .sequence(bytes: bytes, signed: signed, length: fields.count - 1)))
            } else {
                fields.append(.init(name: field.name, type: declaredType(field.type)))
            }
        }
        return fields
    }

    static func declaredType(_ type: TraceSchema.FieldType) -> TraceMetadataEvents.DeclaredType {
        switch type {
        case .u8, .enumeration: return .integer(bytes: 1, signed: false)
        case .u32: return .integer(bytes: 4, signed: false)
        case .s32: return .integer(bytes: 4, signed: true)
        case .u64: return .integer(bytes: 8, signed: false)
        case .s64: return .integer(bytes: 8, signed: true)
        case .string: return .string
        case .array: return .unsupported("an array is two declared fields")
        }
    }

    /// Today's metadata text is what the recorder of 088a5cc wrote (the fixture's), but for the lines that differ
    /// per trace, plus only what the schema added since: events after the old ones, labels at the end of an
    /// enumeration and entries of `env`. Every line the old recorder wrote is still there, unchanged and in its place: the schema's
    /// move to one definition changed no byte of the format, and additions keep old readers' view intact.
    @Test func theMetadataIsUnchangedFromTheFixturesRecorder() throws {
        let old = try String(contentsOfFile: FixtureCompatibilityTests.trace + "/metadata", encoding: .utf8)
        let uuid = EmbeddedTraceReader.parseUUID(EmbeddedTraceReader.value(of: "uuid", in: old)!.trimmingQuotes)!
        let offset = Int64(EmbeddedTraceReader.value(of: "offset_s", in: old)!)! * 1_000_000_000 + Int64(EmbeddedTraceReader.value(of: "offset", in: old)!)!
        let hostname = EmbeddedTraceReader.value(of: "hostname", in: old)!.trimmingQuotes
        let today = TraceSchema.metadata(uuid: uuid, clockOffsetNanoseconds: offset, hostname: hostname)

        // The events added since the fixture: blocks of their own after the old ones.
        let separator = "\nevent {\n"
        let oldEventCount = old.components(separatedBy: separator).count - 1
        let blocks = today.components(separatedBy: separator)
        try #require(blocks.count - 1 >= oldEventCount, "today's metadata has fewer events than the fixture's")
        let withoutAddedEvents = blocks.prefix(1 + oldEventCount).joined(separator: separator)

        // Labels added at the end of an enumeration: `{ "a" = 0, "b" = 1, "new" = 2 } name;` reads as the old line.
        let oldLines = old.split(separator: "\n", omittingEmptySubsequences: false)
        // Entries added to `env` since the fixture (readers ignore keys they do not know).
        let addedEnvironment = ["rlctl_end_file = "]
        let todayLines = withoutAddedEvents.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            !addedEnvironment.contains { line.trimmingCharacters(in: .whitespaces).hasPrefix($0) }
        }
        #expect(todayLines.count == oldLines.count, "today's metadata, without the added events, has other lines")
        for (now, then) in zip(todayLines, oldLines) where now != then {
            let parts = then.components(separatedBy: " } ")
            let extended = then.contains("enum : uint8_t {") && parts.count == 2
                && now.hasPrefix(parts[0] + ", ") && now.hasSuffix(" } " + parts[1])
            // The clock declared absolute since the kernel view (babeltrace2's muxer merges such clocks with LTTng's
            // and with each other); its offset and frequency, which readers use, are unchanged.
            let absolute = then.trimmingCharacters(in: .whitespaces) == "absolute = false;" && now.trimmingCharacters(in: .whitespaces) == "absolute = true;"
            #expect(extended || absolute, "a line the fixture's recorder wrote has changed:\n  then: \(then)\n  now:  \(now)")
        }
    }

    /// The C table's widest event fits the readers' per-event value arrays.
    @Test func theWidestEventIsTheTablesMaximum() {
        #expect(TraceSchema.maxFieldCount == TraceSchema.events.map(\.fields.count).max())
    }
}
