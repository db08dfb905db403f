import Glibc
import TraceModel

/// Streams a trace to a file for viewers and scripts, in constant memory.
public enum TraceExportFormat: String, CaseIterable, Sendable {
    /// Chrome trace-event JSON: opens in Perfetto UI and chrome://tracing.
    case chrome
    case csv
    case jsonl
}

public struct TraceExporter {
    /// Writes every event of `reader` to `path`; returns how many events were written. `options` set what the
    /// Chrome export marks as a stall and as a late timer firing (as `summarize` counts them). `path` is replaced
    /// only by a whole export: on any failure (the input's, the disk's) it is left as it was.
    @discardableResult
    public static func export(_ reader: inout some TraceEventReader, format: TraceExportFormat, to path: String,
                              options: TraceSummarizer.Options = .init()) throws -> UInt64 {
        let out = try AtomicFile(replacing: path)
        var count: UInt64 = 0
        switch format {
        case .chrome:
            var chrome = ChromeTraceWriter(out: out, options: options)
            var losses = NewLossWindows()
            while let event = try reader.next() {
                for window in losses.since(reader.health) { chrome.noteLoss(window) }
                chrome.write(event)
                count += 1
            }
            chrome.finish(health: reader.health)
        case .csv:
            out.write((["timestamp_ns", "thread_id", "event"] + Key.columns).joined(separator: ",") + "\n")
            while let event = try reader.next() {
                forEachRow(of: event) { row in
                    out.write(csvLine(row))
                    count += 1
                }
            }
        case .jsonl:
            while let event = try reader.next() {
                forEachRow(of: event) { row in
                    out.write(jsonLine(row))
                    count += 1
                }
            }
        }
        try out.commit()
        return count
    }

    // ===== CSV and JSONL: one row per event, empty where a field does not apply =====

    /// Column names: fields of the schema (runloop_events.def), looked up there, so that the exports cannot name a
    /// field the schema does not have (the first export stops on a precondition, which every export test reaches);
    /// `id` is the exports' own, the item's id whatever the event calls it (timer_id, source_id…).
    enum Key {
        static let loopID = field(.entry, "loop_id")
        static let mode = field(.entry, "mode")
        static let iteration = field(.entry, "iteration")
        static let depth = field(.entry, "depth")
        static let id = "id"
        static let kind = field(.itemLabel, "kind")
        static let scheduled = field(.timerFireBegin, "scheduled_ns")
        static let tolerance = field(.timerFireBegin, "tolerance_ns")
        static let interval = field(.timerFireBegin, "interval_ns")
        static let missed = field(.timerFireBegin, "missed")
        static let signaled = field(.sourcePerformBegin, "signaled_ns")
        static let enqueued = field(.blockBegin, "enqueued_ns")
        static let slept = field(.wakeUp, "slept_ns")
        static let reason = field(.wakeUp, "reason")
        static let result = field(.runEnd, "result")
        static let label = field(.itemLabel, "label")
        static let priority = field(.jobBegin, "priority")
        static let adapter = field(.loopAdapted, "adapter")
        static let group = field(.loopAdapted, "group_id")
        static let start = field(.nioTick, "start_ns")
        static let end = field(.nioTick, "end_ns")
        static let sleep = field(.nioTick, "sleep_ns")
        static let tasks = field(.nioTick, "tasks")
        static let lateness = field(.probeFire, "lateness_ns")
        static let cost = field(.probeFire, "cost_ns")
        static let call = field(.waitBegin, "call")
        static let target = field(.waitBegin, "target")
        static let setSize = field(.waitBegin, "set_size")
        static let timeout = field(.waitBegin, "timeout_ns")
        static let ready = field(.waitEnd, "ready")
        static let error = field(.waitEnd, "error")
        static let pid = field(.waitThread, "pid")
        static let ppid = field(.waitThread, "ppid")
        static let thread = field(.waitThread, "thread")
        static let process = field(.waitThread, "process")
        static let busy = field(.loopStall, "busy_ns")
        static let threshold = field(.loopStall, "threshold_ns")
        static let culpritKind = field(.loopStall, "culprit_kind")
        static let culpritID = field(.loopStall, "culprit_id")
        static let culpritDuration = field(.loopStall, "culprit_ns")
        static let culpritLabel = field(.loopStall, "culprit_label")
        // The kernel view's (kernel_*): the thread an event is about, and what the kernel saw of it.
        static let subject = field(.kernelOffCPU, "tid")
        static let command = field(.kernelTask, "command")
        static let due = field(.kernelTimer, "due_ns")
        static let latest = field(.kernelTimer, "latest_ns")
        static let fired = field(.kernelTimer, "fired_ns")
        static let cpu = field(.kernelOffCPU, "cpu")
        static let others = field(.kernelRunQueue, "others_ns")
        /// kernel_run_queue's culprit_tid and culprit_ns together: `TID:NS` pairs separated by spaces.
        static let culprits = field(.kernelRunQueue, "culprits")
        static let syscall = field(.kernelOffCPU, "syscall")
        static let left = field(.kernelOffCPU, "left_ns")
        static let woken = field(.kernelOffCPU, "woken_ns")
        static let back = field(.kernelOffCPU, "back_ns")
        static let waker = field(.kernelOffCPU, "waker_tid")
        static let throttled = field(.kernelOffCPU, "throttled_ns")
        static let records = field(.kernelLost, "records")
        static let from = field(.kernelLost, "from_ns")

        /// After timestamp_ns, thread_id and event, in CSV order (columns added later come last, so that scripts
        /// reading the older columns by position keep working).
        static let columns = [loopID, mode, iteration, depth, id, kind, scheduled, tolerance, interval, missed, signaled,
                              enqueued, slept, reason, result, label, priority, adapter, group, start, end, sleep, tasks,
                              lateness, cost, call, target, setSize, timeout, ready, error, pid, ppid, thread, process,
                              busy, threshold, culpritKind, culpritID, culpritDuration, culpritLabel,
                              subject, command, due, latest, fired, cpu, others, culprits, syscall, left, woken, back, waker,
                              throttled, records, from]

        private static func field(_ event: TraceSchema.EventID, _ name: String) -> String {
            precondition(event.description.fieldIndex(name) != nil, "runloop_events.def: event \(event.description.name) has no field \(name)")
            return name
        }
    }

    struct Row {
        var loop = "", mode = "", iteration = "", depth = "", id = "", kind = "", scheduled = "", tolerance = ""
        var interval = "", missed = "", signaled = "", enqueued = "", slept = "", reason = "", result = "", label = ""
        var priority = "", adapter = "", group = "", start = "", end = "", sleep = "", tasks = "", lateness = "", cost = ""
        var call = "", target = "", setSize = "", timeout = "", ready = "", error = "", pid = "", ppid = "", thread = "", process = ""
        var busy = "", threshold = "", culpritKind = "", culpritID = "", culpritDuration = "", culpritLabel = ""
        var subject = "", command = "", due = "", latest = "", fired = "", cpu = "", others = "", culprits = "", syscall = ""
        var left = "", woken = "", back = "", waker = "", throttled = "", records = "", from = ""
    }

    static func row(_ event: TraceEvent) -> Row {
        var r = Row()
        switch event.payload {
        case .activity(_, let p):
            r.loop = "\(p.loopID)"; r.mode = p.mode; r.iteration = "\(p.iteration)"; r.depth = "\(p.depth)"
        case .runBegin(let loop, let mode, _, _):
            r.loop = "\(loop)"; r.mode = mode
        case .runEnd(let loop, let mode, let result):
            r.loop = "\(loop)"; r.mode = mode; r.result = result.description
        case .timerFireBegin(let loop, let id, let scheduled, let tolerance, let interval, let missed):
            r.loop = "\(loop)"; r.id = "\(id)"; r.scheduled = "\(scheduled)"; r.tolerance = "\(tolerance)"
            r.interval = "\(interval)"; r.missed = "\(missed)"
        case .timerFireEnd(let loop, let id), .sourcePerformEnd(let loop, let id), .blockEnd(let loop, let id), .observerEnd(let loop, let id),
             .jobEnd(let loop, let id):
            r.loop = "\(loop)"; r.id = "\(id)"
        case .sourceSignal(let id):
            r.id = "\(id)"
        case .sourcePerformBegin(let loop, let id, let kind, _, let signaled):
            r.loop = "\(loop)"; r.id = "\(id)"; r.kind = kind.description; r.signaled = "\(signaled)"
        case .blockBegin(let loop, let id, let enqueued):
            r.loop = "\(loop)"; r.id = "\(id)"; r.enqueued = "\(enqueued)"
        case .observerBegin(let loop, let id, let activity):
            r.loop = "\(loop)"; r.id = "\(id)"; r.kind = activity.description
        case .mainQueueBegin(let loop), .mainQueueEnd(let loop):
            r.loop = "\(loop)"
        case .wakeUp(let loop, let reason, let slept):
            r.loop = "\(loop)"; r.reason = reason.description; r.slept = "\(slept)"
        case .loopCreate(let loop, _, let name):
            r.loop = "\(loop)"; r.label = name
        case .itemLabel(let id, let kind, let label):
            r.id = "\(id)"; r.kind = kind.description; r.label = label
        case .jobBegin(let loop, let id, let enqueued, let priority):
            r.loop = "\(loop)"; r.id = "\(id)"; r.enqueued = "\(enqueued)"; r.priority = "\(priority)"
        case .loopAdapted(let loop, let adapter, let group):
            r.loop = "\(loop)"; r.adapter = adapter.description; r.group = "\(group)"
        case .nioTick(let loop, let start, let end, let sleep, let tasks):
            r.loop = "\(loop)"; r.start = "\(start)"; r.end = "\(end)"; r.sleep = "\(sleep)"; r.tasks = "\(tasks)"
        case .nioIO(let loop, let channel, let event, let start, let end):
            r.loop = "\(loop)"; r.id = "\(channel)"; r.kind = event.description; r.start = "\(start)"; r.end = "\(end)"
        case .probeFire(let loop, let scheduled, let lateness, let cost):
            r.loop = "\(loop)"; r.scheduled = "\(scheduled)"; r.lateness = "\(lateness)"; r.cost = "\(cost)"
        case .waitBegin(let call, let target, let setSize, let timeout):
            r.call = call.description; r.target = "\(target)"; r.setSize = "\(setSize)"; r.timeout = "\(timeout)"
        case .waitEnd(let ready, let error):
            r.ready = "\(ready)"; r.error = "\(error)"
        case .waitThread(let pid, let ppid, let thread, let process):
            r.pid = "\(pid)"; r.ppid = "\(ppid)"; r.thread = thread; r.process = process
        case .loopStall(let s):
            r.loop = "\(s.loopID)"; r.mode = s.mode; r.iteration = "\(s.iteration)"; r.start = "\(s.start)"
            r.busy = "\(s.busy)"; r.threshold = "\(s.threshold)"; r.culpritKind = s.culpritKind.description
            r.culpritID = "\(s.culpritID)"; r.culpritDuration = "\(s.culpritDuration)"; r.culpritLabel = s.culpritLabel
        case .loopHang(let loop, let iteration, let busy, let threshold):
            r.loop = "\(loop)"; r.iteration = "\(iteration)"; r.busy = "\(busy)"; r.threshold = "\(threshold)"
        case .waitBatch:
            break   // written as its waits (forEachRow(of:_:))
        case .kernelBegin(let pid, let command):
            r.pid = "\(pid)"; r.command = command
        case .kernelTask(let tid, let pid, let command):
            r.subject = "\(tid)"; r.pid = "\(pid)"; r.command = command
        case .kernelTimer(let tid, let due, let latest, let fired):
            r.subject = "\(tid)"; r.due = "\(due)"; r.latest = "\(latest)"; r.fired = "\(fired)"
        case .kernelRunQueue(let queue):
            r.subject = "\(queue.threadID)"; r.cpu = "\(queue.cpu)"; r.others = "\(queue.others)"
            r.culprits = queue.culprits.map { "\($0.threadID):\($0.nanoseconds)" }.joined(separator: " ")
        case .kernelOffCPU(let off):
            r.subject = "\(off.threadID)"; r.reason = off.reason.description; r.syscall = "\(off.syscall)"; r.left = "\(off.left)"
            r.woken = "\(off.woken)"; r.back = "\(off.back)"; r.cpu = "\(off.cpu)"; r.waker = "\(off.wakerThreadID)"
            r.throttled = "\(off.throttled)"
        case .kernelLost(let records, let from):
            r.records = "\(records)"; r.from = "\(from)"
        }
        return r
    }

    /// An event's rows: the event itself, or a batch of waits (LTTng's `wait_batch`) as the `wait_begin` and
    /// `wait_end` rows the embedded recorder's trace has, so that an export looks the same whichever tracer recorded.
    static func forEachRow(of event: TraceEvent, _ body: (TraceEvent) -> Void) {
        guard case .waitBatch(let batch) = event.payload else { return body(event) }
        batch.events(processID: event.processID).forEach(body)
    }

    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return text }
        return "\"" + text.replacingAll("\"", with: "\"\"") + "\""
    }

    static func csvLine(_ event: TraceEvent) -> String {
        let r = row(event)
        let fields = ["\(event.timestamp)", "\(event.threadID)", event.payload.eventName, r.loop, csvField(r.mode), r.iteration,
                      r.depth, r.id, r.kind, r.scheduled, r.tolerance, r.interval, r.missed, r.signaled, r.enqueued,
                      r.slept, r.reason, r.result, csvField(r.label), r.priority, r.adapter, r.group, r.start, r.end, r.sleep,
                      r.tasks, r.lateness, r.cost, r.call, r.target, r.setSize, r.timeout, r.ready, r.error, r.pid, r.ppid,
                      csvField(r.thread), csvField(r.process), r.busy, r.threshold, r.culpritKind, r.culpritID,
                      r.culpritDuration, csvField(r.culpritLabel), r.subject, csvField(r.command), r.due, r.latest, r.fired, r.cpu,
                      r.others, r.culprits, r.syscall, r.left, r.woken, r.back, r.waker, r.throttled, r.records, r.from]
        return fields.joined(separator: ",") + "\n"
    }

    static func jsonLine(_ event: TraceEvent) -> String {
        let r = row(event)
        var parts = ["\"timestamp_ns\":\(event.timestamp)", "\"thread_id\":\(event.threadID)", "\"event\":\"\(event.payload.eventName)\""]
        let numeric: [(String, String)] = [(Key.loopID, r.loop), (Key.iteration, r.iteration), (Key.depth, r.depth), (Key.id, r.id),
                                           (Key.scheduled, r.scheduled), (Key.tolerance, r.tolerance), (Key.interval, r.interval),
                                           (Key.missed, r.missed), (Key.signaled, r.signaled), (Key.enqueued, r.enqueued), (Key.slept, r.slept),
                                           (Key.priority, r.priority), (Key.group, r.group), (Key.start, r.start), (Key.end, r.end),
                                           (Key.sleep, r.sleep), (Key.tasks, r.tasks), (Key.lateness, r.lateness), (Key.cost, r.cost),
                                           (Key.target, r.target), (Key.setSize, r.setSize), (Key.timeout, r.timeout), (Key.ready, r.ready),
                                           (Key.error, r.error), (Key.pid, r.pid), (Key.ppid, r.ppid), (Key.busy, r.busy),
                                           (Key.threshold, r.threshold), (Key.culpritID, r.culpritID), (Key.culpritDuration, r.culpritDuration),
                                           (Key.subject, r.subject), (Key.due, r.due), (Key.latest, r.latest), (Key.fired, r.fired),
                                           (Key.cpu, r.cpu), (Key.others, r.others), (Key.syscall, r.syscall), (Key.left, r.left),
                                           (Key.woken, r.woken), (Key.back, r.back), (Key.waker, r.waker), (Key.throttled, r.throttled),
                                           (Key.records, r.records), (Key.from, r.from)]
        for (key, value) in numeric where !value.isEmpty { parts.append("\"\(key)\":\(value)") }
        let strings: [(String, String)] = [(Key.mode, r.mode), (Key.kind, r.kind), (Key.reason, r.reason), (Key.result, r.result), (Key.label, r.label),
                                           (Key.adapter, r.adapter), (Key.call, r.call), (Key.thread, r.thread), (Key.process, r.process),
                                           (Key.culpritKind, r.culpritKind), (Key.culpritLabel, r.culpritLabel), (Key.command, r.command),
                                           (Key.culprits, r.culprits)]
        for (key, value) in strings where !value.isEmpty { parts.append("\"\(key)\":\(jsonString(value))") }
        return "{" + parts.joined(separator: ",") + "}\n"
    }
}

/// A JSON string literal.
func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 {
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: Character(target), omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
