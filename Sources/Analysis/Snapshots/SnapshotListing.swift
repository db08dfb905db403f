/// What `rlctl record --snapshot-on-stall` prints when the program has ended: every snapshot, the stall that
/// took it (the embedded recorder's snapshot says which; LTTng's: the first one at the threshold since its
/// trigger was armed), what led to it, and how long
/// after the stall the snapshot appeared (LTTng: when rlctl first saw its folder; the embedded recorder: when it
/// had written it).
public struct SnapshotListing: Encodable, Sendable {
    public var snapshots: [StallSnapshot]
    /// When rlctl first saw each snapshot's folder (CLOCK_MONOTONIC ns, the trace's clock).
    public var seenAt: [UInt64]
    /// The moment each snapshot shows, when its recorder says (the timestamp of the stall that took it).
    public var takenAt: [UInt64?]
    /// When the trigger that took each was armed (LTTng's), when known.
    public var armedAt: [UInt64?]
    public var threshold: UInt64
    public var maxSnapshots: Int
    public var folder: String
    public var program: String
    /// Who took the snapshots: "LTTng", or "embedded flight recorder".
    public var tracer: String

    public init(snapshots: [StallSnapshot], seenAt: [UInt64], takenAt: [UInt64?]? = nil, armedAt: [UInt64?]? = nil, threshold: UInt64, maxSnapshots: Int, folder: String, program: String,
                tracer: String) {
        self.tracer = tracer
        self.snapshots = snapshots
        self.seenAt = seenAt
        self.takenAt = takenAt ?? seenAt.map { _ in nil }
        self.armedAt = armedAt ?? seenAt.map { _ in nil }
        self.threshold = threshold
        self.maxSnapshots = maxSnapshots
        self.folder = folder
        self.program = program
    }

    /// The stall that took snapshot `index`, at the threshold: the one reported at the moment the snapshot shows,
    /// when its recorder says; or the first reported since its trigger was armed (a trigger fires once), when that
    /// is known; otherwise the last reported before its folder was seen.
    func trigger(_ index: Int) -> StallSnapshot.Stall? {
        let atThreshold = snapshots[index].stalls.filter { $0.report.busyNanoseconds >= threshold }
        if let takenAt = takenAt[index] { return atThreshold.last { $0.report.reportedAtNanoseconds == takenAt } }
        if let armedAt = armedAt[index] {
            return atThreshold.filter { $0.report.reportedAtNanoseconds >= armedAt }.min { $0.report.reportedAtNanoseconds < $1.report.reportedAtNanoseconds }
        }
        return atThreshold.last { $0.report.reportedAtNanoseconds <= seenAt[index] }
    }

    public func text() -> String {
        var out = ["\(program) — snapshots on stalls of \(formatNanoseconds(threshold)) or more (\(tracer)), in \(folder)"]
        guard !snapshots.isEmpty else {
            out.append("no loop reported a stall that long: no snapshot taken")
            return out.joined(separator: "\n")
        }
        out.append("\(snapshots.count) snapshot\(snapshots.count == 1 ? "" : "s")\(snapshots.count >= maxSnapshots ? " (the most allowed, --max-snapshots \(maxSnapshots))" : "")")
        for index in snapshots.indices {
            out.append("")
            let trigger = trigger(index)
            out += snapshots[index].text(number: index + 1, of: snapshots.count, focus: trigger)
            if let trigger {
                let delay = seenAt[index] > trigger.report.reportedAtNanoseconds ? seenAt[index] - trigger.report.reportedAtNanoseconds : 0
                out.append("  taken by the stall of iteration \(trigger.report.iteration); its folder appeared \(formatNanoseconds(delay)) after the stall was reported")
            }
        }
        return out.joined(separator: "\n")
    }

    public func json() -> String {
        ReportJSON.line(self)
    }
}
