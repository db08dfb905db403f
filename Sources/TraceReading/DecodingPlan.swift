import TraceModel

/// How to decode each event id of one embedded trace, worked out once from its own metadata: for every field
/// the trace declares, in its order, how many bytes it takes and which of the schema's fields (if any) it
/// fills. Fields this build does not know are walked over; events it does not know are walked over whole.
///
/// Kept in flat, trivially copyable arrays: the reader consults it for every event, and a lookup must cost no
/// reference counting.
final class DecodingPlan {
    enum StepKind: UInt8 {
        case u8, u16, u32, u64, s8, s16, s32, s64, string
    }

    struct Step {
        var kind: StepKind
        /// The field's position in the schema's field list of the event, or -1 when the schema does not have it.
        var slot: Int32
        /// For a sequence (whose elements are `kind`), the position among the event's declared fields of the
        /// integer that counts them; -1 for a single value.
        var length: Int32 = -1
    }

    struct Entry {
        /// Whether the metadata declares an event with this id.
        var declared: Bool = false
        /// The schema's EventID raw value, or nil for an event this build does not know (skipped).
        var known: UInt8?
        var firstStep: Int32 = 0
        var stepCount: Int32 = 0
        /// Why an event with this id cannot be decoded (index in `problems`), or -1.
        var problem: Int32 = -1
    }

    let entries: UnsafeMutablePointer<Entry>
    let steps: UnsafeMutablePointer<Step>
    private let stepCapacity: Int
    /// The most fields any declared event has (a decoder keeps each field's value while it walks an event).
    let maxDeclaredFields: Int
    /// Event names by id, for messages.
    private(set) var names: [Int: String] = [:]
    private(set) var problems: [String] = []
    /// The schema's events the metadata declares under another name, with their ids: a renamed event (damaged
    /// metadata), whose events are then lost rather than skipped as a newer recorder's. Empty otherwise.
    private(set) var undeclaredSchemaEvents: [String] = []

    init(_ metadata: TraceMetadataEvents, path: String) throws(TraceReadError) {
        entries = .allocate(capacity: 256)
        entries.initialize(repeating: Entry(), count: 256)
        stepCapacity = max(1, metadata.events.reduce(0) { $0 + $1.fields.count })
        steps = .allocate(capacity: stepCapacity)
        maxDeclaredFields = metadata.events.map(\.fields.count).max() ?? 0
        var used = 0
        for declared in metadata.events {
            guard !entries[declared.id].declared else {
                throw TraceReadError(path: path, reason: "the metadata declares event id \(declared.id) twice (`\(names[declared.id] ?? "")` and `\(declared.name)`)")
            }
            names[declared.id] = declared.name
            let schema = TraceSchema.events.first { $0.name == declared.name }
            var entry = Entry(declared: true, known: schema?.id, firstStep: Int32(used), stepCount: Int32(declared.fields.count))
            var problem = declared.problem
            for field in declared.fields {
                let slot = schema?.fieldIndex(field.name)
                let kind: StepKind
                var length: Int32 = -1
                switch field.type {
                case .string: kind = .string
                case .integer(let bytes, let signed): kind = Self.integerKind(bytes: bytes, signed: signed)
                case .sequence(let bytes, let signed, let lengthIndex):
                    kind = Self.integerKind(bytes: bytes, signed: signed)
                    length = Int32(lengthIndex)
                case .unsupported:
                    kind = .u8   // never walked: the event has a problem
                }
                if let schema, let slot, problem == nil {
                    let wanted = Self.shape(schema.fields[slot].type)
                    let declaredShape = kind == .string ? "a string" : length >= 0 ? "an array" : "an integer"
                    if wanted != declaredShape {
                        problem = "field `\(field.name)` is declared as \(declaredShape), not \(wanted)"
                    }
                }
                steps[used] = Step(kind: kind, slot: Int32(slot ?? -1), length: length)
                used += 1
            }
            if let schema, problem == nil, let missing = schema.fields.first(where: { field in !declared.fields.contains { $0.name == field.name } }) {
                let present = declared.fields.map(\.name).joined(separator: ", ")
                problem = "field `\(missing.name)` is missing (the metadata declares \(present.isEmpty ? "no fields" : present))"
            }
            if let problem {
                entry.problem = Int32(problems.count)
                problems.append(problem)
            }
            entries[declared.id] = entry
        }
        // A renamed event keeps its id (ids are the schema's, fixed per format version): an unknown name declared
        // with the id of a schema event that is not declared. A newer recorder's events have ids of their own.
        let declaredNames = Set(metadata.events.map(\.name))
        undeclaredSchemaEvents = metadata.events.compactMap { declared in
            guard !TraceSchema.events.contains(where: { $0.name == declared.name }),
                  let renamed = TraceSchema.events.first(where: { Int($0.id) == declared.id }),
                  !declaredNames.contains(renamed.name) else { return nil }
            return renamed.name
        }
    }

    private static func integerKind(bytes: Int, signed: Bool) -> StepKind {
        switch (bytes, signed) {
        case (1, false): return .u8
        case (2, false): return .u16
        case (4, false): return .u32
        case (8, false): return .u64
        case (1, true): return .s8
        case (2, true): return .s16
        case (4, true): return .s32
        default: return .s64
        }
    }

    private static func shape(_ type: TraceSchema.FieldType) -> String {
        switch type {
        case .string: return "a string"
        case .array: return "an array"
        default: return "an integer"
        }
    }

    deinit {
        entries.deallocate()
        steps.deallocate()
    }
}
