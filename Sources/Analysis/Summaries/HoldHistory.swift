/// What recently held a loop, for attributing late timers: completed callouts, sleeps and nested runs, in a fixed
/// ring (constant memory). Names are built only when a late firing needs one, never per callout.
struct HoldHistory {
    struct Interval {
        enum What {
            case callout(CalloutKind, id: UInt64)
            case sleep
            case run
        }
        var start: UInt64
        var end: UInt64
        var what: What
        /// Run depth: 1 for what happened in the outermost run.
        var depth: Int
        /// The mode of the run at that depth.
        var mode: Int
    }

    /// What covered one moment at one run depth.
    struct Cover {
        /// The callout made from that run (the latest to start).
        var callout: (kind: CalloutKind, id: UInt64)?
        /// Whether that run slept.
        var asleep = false
        /// The mode of a run nested one level deeper.
        var nestedRunMode: Int?
    }

    private static let capacity = 4096
    private var recent: [Interval] = []
    private var next = 0

    mutating func remember(_ interval: Interval) {
        if recent.count < Self.capacity {
            recent.append(interval)
        } else {
            recent[next] = interval
            next = next + 1 == Self.capacity ? 0 : next + 1
        }
    }

    /// What covered `time` at run depth `depth`, in one pass over the ring (late firings can be frequent).
    func covering(_ time: UInt64, depth: Int) -> Cover {
        var cover = Cover()
        var calloutStart: UInt64 = 0
        for interval in recent where interval.start <= time && time <= interval.end {
            if interval.depth == depth {
                switch interval.what {
                case .callout(let kind, let id):
                    if cover.callout == nil || interval.start >= calloutStart {
                        cover.callout = (kind, id)
                        calloutStart = interval.start
                    }
                case .sleep:
                    cover.asleep = true
                case .run:
                    break
                }
            } else if interval.depth == depth + 1, case .run = interval.what {
                cover.nestedRunMode = interval.mode
            }
        }
        return cover
    }
}
