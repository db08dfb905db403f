/// Mode names as small integers, shared by the loops of one trace, so the hot path compares integers.
final class ModeTable {
    /// The mode of a run whose begin is not in the trace and whose activities have not named it yet.
    static let unknown = -1

    private var ids: [String: Int] = [:]
    /// Runs begin in the same mode over and over: equal strings compare faster than they hash.
    private var lastName = ""
    private var lastID = unknown

    func id(_ mode: String) -> Int {
        if mode == lastName && lastID != Self.unknown { return lastID }
        let id: Int
        if let known = ids[mode] {
            id = known
        } else if ids.count < TraceSummarizer.Limits.modes {
            id = ids.count
            ids[mode] = id
        } else {
            return Self.unknown   // past the limit a mode is not told apart: attribution treats it as unknown
        }
        lastName = mode
        lastID = id
        return id
    }
}

/// The modes a timer has been seen firing in.
struct ModeSet {
    private var bits: UInt64 = 0
    /// Set when a firing's mode is unknown or past the 64th mode: then the set answers yes to every mode, so a
    /// late firing is never blamed on a callout whose nested run might have served it.
    private var any = false

    mutating func insert(_ mode: Int) {
        if mode < 0 || mode >= 64 { any = true } else { bits |= 1 << UInt64(mode) }
    }

    func contains(_ mode: Int) -> Bool {
        any || mode < 0 || mode >= 64 || bits & (1 << UInt64(mode)) != 0
    }
}

/// The labels programs gave their timers, sources, ports and observers (`item_label`), by item id.
final class LabelTable {
    private(set) var labels: [UInt64: String] = [:]

    /// Past ``TraceSummarizer/Limits/labels`` a new item keeps its generic name (`timer-7`); a relabeled one changes.
    func set(_ label: String, for id: UInt64) {
        guard labels.count < TraceSummarizer.Limits.labels || labels[id] != nil else { return }
        labels[id] = label
    }
    subscript(id: UInt64) -> String? { labels[id] }
}
