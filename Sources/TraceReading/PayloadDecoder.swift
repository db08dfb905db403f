import TraceModel

/// Walks one event's fields as a ``DecodingPlan`` says and turns them into a payload: little-endian, byte-aligned
/// fields, as the embedded recorder writes them and as lttng-ust packs them (its metadata says `align = 8`).
/// Shared by the embedded reader's ``StreamCursor`` and the LTTng live reader.
final class PayloadDecoder {
    /// Why an event could not be decoded, and where (a byte offset in the buffer given).
    struct Failure: Error {
        let reason: String
        let offset: Int
    }

    let plan: DecodingPlan
    /// The current event's integer fields and string fields (byte ranges in the buffer), by schema position.
    private let integers: UnsafeMutablePointer<UInt64>
    private let strings: UnsafeMutablePointer<(start: Int, end: Int)>
    /// The current event's arrays: where each one's elements start in `elements`, and how many, by schema position.
    private let arrays: UnsafeMutablePointer<(start: Int, count: Int)>
    private var elements: [UInt64] = []
    /// The current event's declared integer fields in their declared order (a sequence's count is one of them).
    private let declaredValues: UnsafeMutablePointer<UInt64>
    private var stringCache: (bytes: [UInt8], string: String) = ([], "")
    private var bytes = UnsafeRawBufferPointer(start: nil, count: 0)

    init(plan: DecodingPlan) {
        self.plan = plan
        integers = .allocate(capacity: TraceSchema.maxFieldCount)
        integers.initialize(repeating: 0, count: TraceSchema.maxFieldCount)
        strings = .allocate(capacity: TraceSchema.maxFieldCount)
        strings.initialize(repeating: (0, 0), count: TraceSchema.maxFieldCount)
        arrays = .allocate(capacity: TraceSchema.maxFieldCount)
        arrays.initialize(repeating: (0, 0), count: TraceSchema.maxFieldCount)
        declaredValues = .allocate(capacity: max(1, plan.maxDeclaredFields))
        declaredValues.initialize(repeating: 0, count: max(1, plan.maxDeclaredFields))
    }

    deinit {
        integers.deallocate()
        strings.deallocate()
        arrays.deallocate()
        declaredValues.deallocate()
    }

    /// Reads the fields of the event with id `rawID` from `buffer[offset..<end]` and moves `offset` past them.
    /// Returns nil for an event this build does not know (walked over by its declared fields).
    @inline(__always)
    func payload(rawID: Int, eventStart: Int, in buffer: UnsafeRawBufferPointer, offset: inout Int, end: Int) throws(Failure) -> TraceEvent.Payload? {
        let entry = rawID < 256 ? plan.entries[rawID] : DecodingPlan.Entry()
        guard entry.declared else { throw Failure(reason: "unknown event id \(rawID) (the metadata declares no such event)", offset: eventStart) }
        if entry.problem >= 0 {
            throw Failure(reason: "event runloop:\(plan.names[rawID] ?? "?"): \(plan.problems[Int(entry.problem)])", offset: eventStart)
        }
        bytes = buffer
        let first = plan.steps + Int(entry.firstStep)
        var step = first
        let last = step + Int(entry.stepCount)
        var elementsUsed = 0
        while step < last {
            if step.pointee.length >= 0 {
                try sequence(step.pointee, count: declaredValues[Int(step.pointee.length)], at: &offset, end: end, elementsUsed: &elementsUsed)
                step += 1
                continue
            }
            guard step.pointee.kind == .string else {
                let value = try integer(step.pointee.kind, at: &offset, end: end)
                if step.pointee.slot >= 0 { integers[Int(step.pointee.slot)] = value }
                declaredValues[step - first] = value
                step += 1
                continue
            }
            var index = offset
            while index < end && buffer[index] != 0 { index += 1 }
            guard index < end else { throw Failure(reason: "unterminated string in event", offset: offset) }
            if step.pointee.slot >= 0 { strings[Int(step.pointee.slot)] = (offset, index) }
            offset = index + 1
            step += 1
        }
        guard let known = entry.known, let id = TraceSchema.EventID(rawValue: known) else { return nil }
        var fields = Fields(decoder: self)
        do {
            return try TraceEventDecoding.payload(id, &fields)
        } catch {
            throw Failure(reason: "corrupt event runloop:\(id.description.name): \(error.describe(id))", offset: eventStart)
        }
    }

    /// A sequence of `count` integers at `offset` (its count was an earlier field), moving `offset` past it; its
    /// elements go to `elements` for the schema's field, if it has one.
    private func sequence(_ step: DecodingPlan.Step, count: UInt64, at offset: inout Int, end: Int, elementsUsed: inout Int) throws(Failure) {
        let size: Int
        switch step.kind {
        case .u8, .s8: size = 1
        case .u16, .s16: size = 2
        case .u32, .s32: size = 4
        case .u64, .s64: size = 8
        case .string: throw Failure(reason: "a sequence of strings", offset: offset)
        }
        guard count <= UInt64(end - offset) / UInt64(size) else {
            throw Failure(reason: "a sequence of \(count) elements runs past the end of the packet", offset: offset)
        }
        let elementCount = Int(count)
        guard step.slot >= 0 else {
            offset += elementCount * size
            return
        }
        if elements.count < elementsUsed + elementCount { elements.append(contentsOf: repeatElement(0, count: elementsUsed + elementCount - elements.count)) }
        for index in 0..<elementCount {
            elements[elementsUsed + index] = try integer(step.kind, at: &offset, end: end)
        }
        arrays[Int(step.slot)] = (elementsUsed, elementCount)
        elementsUsed += elementCount
    }

    /// An integer field of `kind` at `offset` as 64 bits (signed ones sign-extended), moving `offset` past it.
    @inline(__always)
    private func integer(_ kind: DecodingPlan.StepKind, at offset: inout Int, end: Int) throws(Failure) -> UInt64 {
        switch kind {
        case .u8: return UInt64(try take(UInt8.self, at: &offset, end: end))
        case .s8: return UInt64(bitPattern: Int64(try take(Int8.self, at: &offset, end: end)))
        case .u16: return UInt64(try take(UInt16.self, at: &offset, end: end))
        case .s16: return UInt64(bitPattern: Int64(try take(Int16.self, at: &offset, end: end)))
        case .u32: return UInt64(try take(UInt32.self, at: &offset, end: end))
        case .s32: return UInt64(bitPattern: Int64(try take(Int32.self, at: &offset, end: end)))
        case .u64, .s64, .string: return try take(UInt64.self, at: &offset, end: end)
        }
    }

    /// The integer at `offset`, moving `offset` past it.
    @inline(__always)
    private func take<T: FixedWidthInteger>(_ type: T.Type, at offset: inout Int, end: Int) throws(Failure) -> T {
        let size = MemoryLayout<T>.size
        guard offset + size <= end else { throw Failure(reason: "event field runs past the end of the packet", offset: offset) }
        defer { offset += size }
        return bytes.littleEndian(T.self, at: offset)
    }

    private struct Fields: SchemaFieldValues {
        unowned(unsafe) let decoder: PayloadDecoder

        @inline(__always)
        func integer(_ field: Int) -> UInt64 { decoder.integers[field] }

        func count(_ field: Int) -> Int { decoder.arrays[field].count }

        func element(_ field: Int, _ index: Int) -> UInt64 { decoder.elements[decoder.arrays[field].start + index] }

        @inline(__always)
        mutating func string(_ field: Int) -> String {
            let range = decoder.strings[field]
            let bytes = UnsafeRawBufferPointer(rebasing: decoder.bytes[range.start..<range.end])
            // Mode names repeat on nearly every event: reuse the last String instead of allocating.
            if bytes.elementsEqual(decoder.stringCache.bytes) { return decoder.stringCache.string }
            let string = String(decoding: bytes, as: UTF8.self)
            decoder.stringCache = (Array(bytes), string)
            return string
        }
    }
}

extension UnsafeRawBufferPointer {
    /// The little-endian integer at `offset`, wherever it is aligned (CTF packets pack their fields).
    @inline(__always)
    func littleEndian<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        T(littleEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
