import TraceModel

/// One event's field values, by their position in the schema's field list (``TraceSchema/events``): what each
/// reader extracts from its trace (by field name, whatever order or extra fields the trace has) before
/// ``TraceEventDecoding`` turns it into a ``TraceEvent``. Integers are 64-bit (signed ones as two's complement),
/// arrays' elements too.
protocol SchemaFieldValues {
    func integer(_ field: Int) -> UInt64
    mutating func string(_ field: Int) -> String
    /// How many elements the array field has (as the trace holds it: its own count).
    func count(_ field: Int) -> Int
    /// The array field's element at `index` (below ``count(_:)``).
    func element(_ field: Int, _ index: Int) -> UInt64
}

/// A field's value that the model cannot hold: an enumeration value without a label, a thread id beyond 32 bits.
struct FieldValueProblem: Error {
    let field: Int
    let value: UInt64
    let expected: String

    /// "field `kind` = 9 is not a source kind".
    func describe(_ event: TraceSchema.EventID) -> String {
        let name = event.description.fields[field].name
        return "field `\(name)` = \(Int64(bitPattern: value)) is not \(expected)"
    }
}

/// The one mapping from the schema's fields to ``TraceEvent/Payload``, shared by both readers: the code that
/// fills a new field of runloop_events.def into the model goes here, once.
enum TraceEventDecoding {
    @inline(__always)
    static func payload(_ id: TraceSchema.EventID, _ v: inout some SchemaFieldValues) throws(FieldValueProblem) -> TraceEvent.Payload {
        switch id {
        case .entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit:
            // loop_id, mode, iteration, depth
            let loopID = v.integer(0)
            let mode = v.string(1)
            let depth = v.integer(3)
            guard depth <= TraceSchema.maxRunDepth, let narrow = UInt32(exactly: depth) else {
                throw FieldValueProblem(field: 3, value: depth, expected: "a run depth (at most \(TraceSchema.maxRunDepth))")
            }
            return .activity(LoopActivity.ordered[Int(id.rawValue)], .init(loopID: loopID, mode: mode, iteration: v.integer(2), depth: narrow))
        case .runBegin:
            // loop_id, mode, timeout_ns, return_after_source_handled
            let loopID = v.integer(0)
            return .runBegin(loopID: loopID, mode: v.string(1), timeoutNanoseconds: v.integer(2), returnAfterSourceHandled: v.integer(3) != 0)
        case .runEnd:
            // loop_id, mode, result
            let loopID = v.integer(0)
            let mode = v.string(1)
            return .runEnd(loopID: loopID, mode: mode, result: try label(v.integer(2), field: 2, LoopRunResult.init(traceValue:), "a run result"))
        case .timerFireBegin:
            // loop_id, timer_id, scheduled_ns, tolerance_ns, interval_ns, missed
            return .timerFireBegin(loopID: v.integer(0), timerID: v.integer(1), scheduled: v.integer(2), tolerance: v.integer(3),
                                   interval: v.integer(4), missed: v.integer(5))
        case .timerFireEnd:
            return .timerFireEnd(loopID: v.integer(0), timerID: v.integer(1))
        case .sourceSignal:
            return .sourceSignal(sourceID: v.integer(0))
        case .sourcePerformBegin:
            // loop_id, source_id, kind, order, signaled_ns
            let kind = try label(v.integer(2), field: 2, LoopSourceKind.init(traceValue:), "a source kind")
            return .sourcePerformBegin(loopID: v.integer(0), sourceID: v.integer(1), kind: kind, order: Int64(bitPattern: v.integer(3)),
                                       signaled: v.integer(4))
        case .sourcePerformEnd:
            return .sourcePerformEnd(loopID: v.integer(0), sourceID: v.integer(1))
        case .blockBegin:
            return .blockBegin(loopID: v.integer(0), blockID: v.integer(1), enqueued: v.integer(2))
        case .blockEnd:
            return .blockEnd(loopID: v.integer(0), blockID: v.integer(1))
        case .observerBegin:
            let activity = try label(v.integer(2), field: 2, LoopActivity.init(traceValue:), "an activity")
            return .observerBegin(loopID: v.integer(0), observerID: v.integer(1), activity: activity)
        case .observerEnd:
            return .observerEnd(loopID: v.integer(0), observerID: v.integer(1))
        case .wakeUp:
            let reason = try label(v.integer(1), field: 1, LoopWakeReason.init(traceValue:), "a wake reason")
            return .wakeUp(loopID: v.integer(0), reason: reason, slept: v.integer(2))
        case .loopCreate:
            // loop_id, tid, name
            return .loopCreate(loopID: v.integer(0), threadID: try signed32(v.integer(1), field: 1, "a thread id"), name: v.string(2))
        case .itemLabel:
            // item_id, kind, label
            let kind = try label(v.integer(1), field: 1, LoopItemKind.init(traceValue:), "an item kind")
            return .itemLabel(itemID: v.integer(0), kind: kind, label: v.string(2))
        case .mainQueueBegin:
            return .mainQueueBegin(loopID: v.integer(0))
        case .mainQueueEnd:
            return .mainQueueEnd(loopID: v.integer(0))
        case .jobBegin:
            // loop_id, job_id, enqueued_ns, priority
            let priority = v.integer(3)
            guard let narrow = UInt8(exactly: priority) else { throw FieldValueProblem(field: 3, value: priority, expected: "a job priority") }
            return .jobBegin(loopID: v.integer(0), jobID: v.integer(1), enqueued: v.integer(2), priority: narrow)
        case .jobEnd:
            return .jobEnd(loopID: v.integer(0), jobID: v.integer(1))
        case .loopAdapted:
            // loop_id, adapter, group_id
            let adapter = try label(v.integer(1), field: 1, LoopAdapter.init(traceValue:), "an adapter")
            return .loopAdapted(loopID: v.integer(0), adapter: adapter, groupID: v.integer(2))
        case .nioTick:
            // loop_id, start_ns, end_ns, sleep_ns, tasks
            return .nioTick(loopID: v.integer(0), start: v.integer(1), end: v.integer(2), sleep: v.integer(3), tasks: v.integer(4))
        case .nioIO:
            // loop_id, channel_id, io, start_ns, end_ns
            let event = try label(v.integer(2), field: 2, NIOIOEvent.init(traceValue:), "a NIO I/O event")
            return .nioIO(loopID: v.integer(0), channelID: v.integer(1), event: event, start: v.integer(3), end: v.integer(4))
        case .probeFire:
            // loop_id, scheduled_ns, lateness_ns, cost_ns
            return .probeFire(loopID: v.integer(0), scheduled: v.integer(1), lateness: v.integer(2), cost: v.integer(3))
        case .waitBegin:
            // call, target, set_size, timeout_ns
            let call = try label(v.integer(0), field: 0, WaitCall.init(traceValue:), "a wait call")
            return .waitBegin(call: call, target: try signed32(v.integer(1), field: 1, "a descriptor"),
                              setSize: UInt32(truncatingIfNeeded: v.integer(2)), timeout: Int64(bitPattern: v.integer(3)))
        case .waitEnd:
            // ready, error
            return .waitEnd(ready: try signed32(v.integer(0), field: 0, "a wait result"),
                            error: try signed32(v.integer(1), field: 1, "an errno"))
        case .waitThread:
            // pid, ppid, thread, process
            let pid = try signed32(v.integer(0), field: 0, "a process id"), ppid = try signed32(v.integer(1), field: 1, "a process id")
            return .waitThread(pid: pid, ppid: ppid, thread: v.string(2), process: v.string(3))
        case .loopStall:
            // loop_id, mode, iteration, start_ns, busy_ns, threshold_ns, culprit_kind, culprit_id, culprit_ns, culprit_label
            let loopID = v.integer(0)
            let mode = v.string(1)
            let kind = try label(v.integer(6), field: 6, LoopCalloutKind.init(traceValue:), "a callout kind")
            return .loopStall(.init(loopID: loopID, mode: mode, iteration: v.integer(2), start: v.integer(3), busy: v.integer(4),
                                    threshold: v.integer(5), culpritKind: kind, culpritID: v.integer(7),
                                    culpritDuration: v.integer(8), culpritLabel: v.string(9)))
        case .loopHang:
            // loop_id, iteration, busy_ns, threshold_ns
            return .loopHang(loopID: v.integer(0), iteration: v.integer(1), busy: v.integer(2), threshold: v.integer(3))
        case .waitBatch:
            // tid, waits, then one array per wait field: call, target, set_size, timeout_ns, begin_ns, end_ns, ready, error
            let threadID = try signed32(v.integer(0), field: 0, "a thread id")
            let waits = v.integer(1)
            for field in 2..<10 where UInt64(v.count(field)) != waits {
                throw FieldValueProblem(field: field, value: UInt64(v.count(field)), expected: "an array of `waits` (\(waits)) elements")
            }
            var batch = TraceEvent.WaitBatch(threadID: threadID, waits: [])
            batch.waits.reserveCapacity(Int(waits))
            for index in 0..<Int(waits) {
                let call = try label(v.element(2, index), field: 2, WaitCall.init(traceValue:), "a wait call")
                let end = v.element(7, index)
                batch.waits.append(.init(call: call, target: try signed32(v.element(3, index), field: 3, "a descriptor"),
                                         setSize: UInt32(truncatingIfNeeded: v.element(4, index)),
                                         timeout: Int64(bitPattern: v.element(5, index)), begin: v.element(6, index),
                                         end: end == 0 ? nil : end, ready: try signed32(v.element(8, index), field: 8, "a wait result"),
                                         error: try signed32(v.element(9, index), field: 9, "an errno")))
            }
            return .waitBatch(batch)
        case .kernelBegin:
            // pid, command
            return .kernelBegin(pid: try signed32(v.integer(0), field: 0, "a process id"), command: v.string(1))
        case .kernelTask:
            // tid, pid, command
            let threadID = try signed32(v.integer(0), field: 0, "a thread id"), pid = try signed32(v.integer(1), field: 1, "a process id")
            return .kernelTask(threadID: threadID, pid: pid, command: v.string(2))
        case .kernelTimer:
            // tid, due_ns, latest_ns, fired_ns
            return .kernelTimer(threadID: try signed32(v.integer(0), field: 0, "a thread id"), due: v.integer(1), latest: v.integer(2),
                                fired: v.integer(3))
        case .kernelRunQueue:
            // tid, cpu, others_ns, culprits, culprit_tid[], culprit_ns[]
            let culprits = v.integer(3)
            for field in 4..<6 where UInt64(v.count(field)) != culprits {
                throw FieldValueProblem(field: field, value: UInt64(v.count(field)), expected: "an array of `culprits` (\(culprits)) elements")
            }
            var queue = TraceEvent.KernelRunQueue(threadID: try signed32(v.integer(0), field: 0, "a thread id"),
                                                  cpu: try signed32(v.integer(1), field: 1, "a CPU"), others: v.integer(2), culprits: [])
            queue.culprits.reserveCapacity(Int(culprits))
            for index in 0..<Int(culprits) {
                queue.culprits.append(.init(threadID: try signed32(v.element(4, index), field: 4, "a thread id"), nanoseconds: v.element(5, index)))
            }
            return .kernelRunQueue(queue)
        case .kernelOffCPU:
            // tid, reason, syscall, left_ns, woken_ns, back_ns, cpu, waker_tid, throttled_ns
            let reason = try label(v.integer(1), field: 1, KernelOffCPUReason.init(traceValue:), "an off-CPU reason")
            return .kernelOffCPU(.init(threadID: try signed32(v.integer(0), field: 0, "a thread id"), reason: reason,
                                       syscall: try signed32(v.integer(2), field: 2, "a system call number"), left: v.integer(3),
                                       woken: v.integer(4), back: v.integer(5), cpu: try signed32(v.integer(6), field: 6, "a CPU"),
                                       wakerThreadID: try signed32(v.integer(7), field: 7, "a thread id"), throttled: v.integer(8)))
        case .kernelLost:
            // records, from_ns
            return .kernelLost(records: v.integer(0), from: v.integer(1))
        }
    }

    @inline(__always)
    private static func label<T>(_ value: UInt64, field: Int, _ make: (Int64) -> T?, _ expected: String) throws(FieldValueProblem) -> T {
        guard let decoded = make(Int64(bitPattern: value)) else { throw FieldValueProblem(field: field, value: value, expected: expected) }
        return decoded
    }

    /// A signed 32-bit field (held as a sign-extended 64-bit integer).
    @inline(__always)
    private static func signed32(_ value: UInt64, field: Int, _ expected: String) throws(FieldValueProblem) -> Int32 {
        guard let narrow = Int32(exactly: Int64(bitPattern: value)) else { throw FieldValueProblem(field: field, value: value, expected: expected) }
        return narrow
    }
}
