import Foundation

/// The trace-event format's rules that a viewer relies on (Perfetto UI, chrome://tracing), checked on an exported
/// file: what breaks them makes a viewer drop slices or arrows, or draw them on the wrong slice.
public struct ChromeTraceFile {
    public let events: [[String: Any]]

    public init(path: String) throws {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        guard let events = (object as? [String: Any])?["traceEvents"] as? [[String: Any]] else {
            throw CocoaError(.propertyListReadCorrupt, userInfo: [NSDebugDescriptionErrorKey: "\(path): no traceEvents array"])
        }
        self.events = events
    }

    public func phase(_ event: [String: Any]) -> String { event["ph"] as? String ?? "" }
    public func args(_ event: [String: Any]) -> [String: Any] { event["args"] as? [String: Any] ?? [:] }
    /// Microseconds.
    public func ts(_ event: [String: Any]) -> Double? { (event["ts"] as? NSNumber)?.doubleValue }

    public func events(_ phase: String, named name: String? = nil) -> [[String: Any]] {
        events.filter { self.phase($0) == phase && (name == nil || $0["name"] as? String == name) }
    }

    /// Flows by bind id: the slice each starts on and the slice each ends on.
    public var flows: [String: (out: [String: Any]?, in: [String: Any]?)] {
        var flows: [String: (out: [String: Any]?, in: [String: Any]?)] = [:]
        for event in events {
            guard let id = event["bind_id"] as? String else { continue }
            if event["flow_out"] as? Bool == true { flows[id, default: (nil, nil)].out = event }
            if event["flow_in"] as? Bool == true { flows[id, default: (nil, nil)].in = event }
        }
        return flows
    }

    /// Every rule broken, one line each (empty when the file keeps them all).
    public func violations() -> [String] {
        var problems: [String] = []
        // Slices of one thread: every E closes a B of that thread, and B/E and X slices nest without partial overlap.
        var intervals: [String: [(start: Double, end: Double, name: String)]] = [:]
        var stacks: [String: [(start: Double, name: String)]] = [:]
        var flowEnds: [String: (out: Int, in: Int)] = [:]
        var asyncOpen: [String: Double] = [:]
        var asyncSlices: [String: [(start: Double, end: Double)]] = [:]
        for event in events {
            let ph = phase(event)
            guard event["pid"] is NSNumber else {
                problems.append("no pid: \(event)")
                continue
            }
            if ph == "M" { continue }
            guard let ts = ts(event), ts >= 0 else {
                problems.append("no timestamp, or a negative one: \(event)")
                continue
            }
            let thread = "\(event["pid"]!)/\(event["tid"].map { "\($0)" } ?? "-")"
            let name = event["name"] as? String ?? ""
            switch ph {
            case "B":
                stacks[thread, default: []].append((ts, name))
            case "E":
                guard let begin = stacks[thread]?.popLast() else {
                    problems.append("an E with no B on thread \(thread) at \(ts)")
                    continue
                }
                if ts < begin.start { problems.append("\(begin.name) on \(thread) ends (\(ts)) before it begins (\(begin.start))") }
                intervals[thread, default: []].append((begin.start, ts, begin.name))
            case "X":
                guard let duration = (event["dur"] as? NSNumber)?.doubleValue, duration >= 0 else {
                    problems.append("an X with no duration: \(event)")
                    continue
                }
                intervals[thread, default: []].append((ts, ts + duration, name))
            case "C":
                let values = args(event)
                if values.isEmpty { problems.append("a counter with no value: \(event)") }
                for (key, value) in values {
                    // JSONSerialization reads true/false as NSNumber too (of ObjC type "c"): a counter must be a
                    // number, not a Bool.
                    guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else {
                        problems.append("counter \(name) \(key) is not numeric: \(value)")
                        continue
                    }
                    if !number.doubleValue.isFinite { problems.append("counter \(name) \(key) is not finite") }
                }
            case "b", "e":
                guard let id = event["id"] as? String, let category = event["cat"] as? String else {
                    problems.append("an async event with no id or category: \(event)")
                    continue
                }
                let track = category + "/" + id
                if ph == "b" {
                    if asyncOpen[track] != nil { problems.append("async track \(track) begins again before it ended, at \(ts)") }
                    asyncOpen[track] = ts
                } else if let start = asyncOpen.removeValue(forKey: track) {
                    if ts < start { problems.append("async slice on \(track) ends before it begins") }
                    asyncSlices[track, default: []].append((start, ts))
                } else {
                    problems.append("an async end with no begin on \(track) at \(ts)")
                }
            case "i", "I":
                break
            case "n":
                if event["id"] == nil || event["cat"] == nil { problems.append("an async instant with no id or category: \(event)") }
            default:
                problems.append("unknown phase \(ph): \(event)")
            }
            if let id = event["bind_id"] as? String {
                // Perfetto binds flows to thread slices (X, B) and to async slices and instants (b, n).
                guard ["X", "B", "b", "n"].contains(ph) else {
                    problems.append("flow \(id) is bound to a \(ph) event, not a slice")
                    continue
                }
                if event["flow_out"] as? Bool == true { flowEnds[id, default: (0, 0)].out += 1 }
                if event["flow_in"] as? Bool == true { flowEnds[id, default: (0, 0)].in += 1 }
            }
        }
        for (thread, open) in stacks where !open.isEmpty {
            problems.append("\(open.count) slices on thread \(thread) never end (\(open.map(\.name)))")
        }
        for (track, start) in asyncOpen { problems.append("async slice on \(track) from \(start) never ends") }
        // A viewer sorts a track's begins and ends by time: slices of one track that overlap get each other's ends.
        for (track, slices) in asyncSlices {
            let ordered = slices.sorted { $0.start < $1.start }
            for (previous, next) in zip(ordered, ordered.dropFirst()) where next.start + 0.000_5 < previous.end {
                problems.append("async slices on \(track) overlap: [\(previous.start), \(previous.end)] and [\(next.start), \(next.end)]")
            }
        }
        for (id, ends) in flowEnds where ends.out != 1 || ends.in != 1 {
            problems.append("flow \(id) has \(ends.out) starts and \(ends.in) ends (one of each binds it)")
        }
        for (id, flow) in flows {
            if let from = flow.out.flatMap(ts), let to = flow.in.flatMap(ts), to + 0.000_5 < from {
                problems.append("flow \(id) goes back in time (\(from) → \(to))")
            }
        }
        // Nesting: sorted by start (longer first at equal starts), each slice lies inside the one it starts in.
        // Microsecond timestamps with three decimals: half a nanosecond of slack.
        let slack = 0.000_5
        for (thread, slices) in intervals {
            var open: [(start: Double, end: Double, name: String)] = []
            for slice in slices.sorted(by: { $0.start != $1.start ? $0.start < $1.start : $0.end > $1.end }) {
                while let top = open.last, top.end <= slice.start + slack, !(top.start == slice.start && top.end >= slice.end) {
                    open.removeLast()
                }
                if let top = open.last, slice.end > top.end + slack {
                    problems.append("on thread \(thread), \(slice.name) [\(slice.start), \(slice.end)] overlaps \(top.name) [\(top.start), \(top.end)] without nesting in it")
                    if problems.count > 50 { return problems }
                    continue
                }
                open.append(slice)
            }
        }
        return problems
    }
}
