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
    /// Event names by id, for messages.
    private(set) var names: [Int: String] = [:]
    private(set) var problems: [String] = []

    init(_ metadata: TraceMetadataEvents, path: String) throws(TraceReadError) {
        entries = .allocate(capacity: 256)
        entries.initialize(repeating: Entry(), count: 256)
        stepCapacity = max(1, metadata.events.reduce(0) { $0 + $1.fields.count })
        steps = .allocate(capacity: stepCapacity)
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
                switch field.type {
                case .string: kind = .string
                case .integer(let bytes, let signed):
                    switch (bytes, signed) {
                    case (1, false): kind = .u8
                    case (2, false): kind = .u16
                    case (4, false): kind = .u32
                    case (8, false): kind = .u64
                    case (1, true): kind = .s8
                    case (2, true): kind = .s16
                    case (4, true): kind = .s32
                    default: kind = .s64
                    }
                case .unsupported:
                    kind = .u8   // never walked: the event has a problem
                }
                if let schema, let slot, problem == nil {
                    let wantsString = schema.fields[slot].type == .string
                    if wantsString != (kind == .string) {
                        problem = "field `\(field.name)` is declared as \(kind == .string ? "a string" : "an integer"), not \(wantsString ? "a string" : "an integer")"
                    }
                }
                steps[used] = Step(kind: kind, slot: Int32(slot ?? -1))
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
    }

    deinit {
        entries.deallocate()
        steps.deallocate()
    }
}
