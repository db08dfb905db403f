/// The modes a performed block may run in. The one-mode cases avoid an array per block.
enum BlockModes {
    case common
    case one(Loop.Mode)
    case several([Loop.Mode])

    init(_ modes: [Loop.Mode]) {
        if modes.count == 1 {
            self = modes[0] == .common ? .common : .one(modes[0])
        } else {
            self = .several(modes)
        }
    }

    /// Whether a block may run in `mode`; the common token is resolved now, against the current common set.
    func admits(_ mode: Loop.Mode, modeIsCommon: Bool) -> Bool {
        switch self {
        case .common: return modeIsCommon
        case .one(let only): return only == mode
        case .several(let modes): return modes.contains { $0 == mode || ($0 == .common && modeIsCommon) }
        }
    }
}

/// A block queued with `perform(inModes:)`, or an actor's job enqueued on the loop as its executor.
struct PendingBlock {
    /// What runs: one queue for both keeps a block performed before a job ahead of it, and a job costs no
    /// closure (the runtime's job is stored as it is).
    enum Work {
        case block(@Sendable () -> Void)
        case job(UnownedJob)
    }

    let modes: BlockModes
    let work: Work
    /// Process-unique id, for traces.
    let id: UInt64
    /// Monotonic time it was queued, for wake-up latency (0 when nobody asked for it).
    let enqueuedAt: UInt64

    init(modes: BlockModes, work: Work, id: UInt64 = 0, enqueuedAt: UInt64 = 0) {
        self.modes = modes
        self.work = work
        self.id = id
        self.enqueuedAt = enqueuedAt
    }
}
