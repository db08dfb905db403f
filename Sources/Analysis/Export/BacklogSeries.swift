/// One loop's backlog over time — items due and not yet called out: timers past their fire date, signalled
/// sources, port messages, queued blocks and jobs — as the mean number waiting in each bucket, in constant memory.
/// An item is known only when its callout begins (its begin event carries when it became due), so each adds the
/// time it waited to the buckets it spans: the partial first and last bucket directly, the whole ones between
/// through a difference array, O(1) per item. Buckets start at 1 ms and double in width past `limit`.
struct BacklogSeries {
    let origin: UInt64
    let limit: Int
    private(set) var width: UInt64 = 1_000_000
    /// Item-nanoseconds waited in each bucket (whole buckets not yet folded in).
    private var waited: [Double] = []
    /// Items covering whole buckets: +1 at the first, −1 after the last.
    private var whole: [Int64] = []

    init(origin: UInt64, limit: Int = 100_000) {
        self.origin = origin
        self.limit = max(2, limit)
    }

    private func index(_ ts: UInt64) -> Int { Int((ts - origin) / width) }

    /// An item due at `due` whose callout began at `start`.
    mutating func add(due: UInt64, start: UInt64) {
        let from = max(due, origin)
        guard start > from else { return }
        while index(start) >= limit { widen() }
        let first = index(from), last = index(start)
        if waited.count <= last {
            waited += repeatElement(0, count: last + 1 - waited.count)
            whole += repeatElement(0, count: last + 1 - whole.count)
        }
        guard first != last else {
            waited[first] += Double(start - from)
            return
        }
        waited[first] += Double(origin + UInt64(first + 1) * width - from)
        waited[last] += Double(start - (origin + UInt64(last) * width))
        if last - first >= 2 {
            whole[first + 1] += 1
            whole[last] -= 1
        }
    }

    private mutating func fold() {
        var covering: Int64 = 0
        for index in whole.indices {
            covering += whole[index]
            waited[index] += Double(covering) * Double(width)
            whole[index] = 0
        }
    }

    private mutating func widen() {
        fold()
        width *= 2
        waited = stride(from: 0, to: waited.count, by: 2).map { $0 + 1 < waited.count ? waited[$0] + waited[$0 + 1] : waited[$0] }
        whole = Array(repeating: 0, count: waited.count)
    }

    /// Each bucket's start and mean number of items waiting, up to `end` (the last bucket counts to `end` only).
    mutating func levels(end: UInt64) -> [(start: UInt64, items: Double)] {
        fold()
        return waited.indices.map { index in
            let start = origin + UInt64(index) * width
            let span = end > start ? min(width, end - start) : width
            return (start, waited[index] / Double(span))
        }
    }
}
