import Synchronization

/// The wake-up delays a loop's thread measured that its reader has not taken yet (``LoopMeasurements``).
///
/// A metrics backend's record is not cheap (swift-prometheus takes a lock and searches the buckets: about 100 ns),
/// and a busy loop makes one per callout. The loop's thread stores the delay here instead, and the reader records
/// it, at its next update or as soon as half the ring is waiting. One producer (the loop's thread) and one consumer
/// (the reader, one at a time); the slots are allocated once.
final class DelayRing: @unchecked Sendable {
    static let capacity = 4_096
    /// The flag a timer callout's delay carries.
    static let timerFlag: UInt64 = 1 << 63

    private let slots: UnsafeMutablePointer<UInt64>
    /// Values pushed so far: written by the producer only.
    private let head = Atomic<Int>(0)
    /// Values taken so far: written by the consumer only.
    private let tail = Atomic<Int>(0)

    init() {
        slots = .allocate(capacity: Self.capacity)
    }

    deinit { slots.deallocate() }

    enum Push {
        case stored
        /// Stored, and the ring is now half full: time the consumer came.
        case storedHalfFull
        /// Not stored: the ring is full (the producer records the value itself).
        case full
    }

    /// Producer: keeps `value` for the consumer.
    @inline(__always)
    func push(_ value: UInt64) -> Push {
        let position = head.load(ordering: .relaxed)
        let waiting = position &- tail.load(ordering: .acquiring)
        guard waiting < Self.capacity else { return .full }
        slots[position & (Self.capacity - 1)] = value
        head.store(position &+ 1, ordering: .releasing)
        return waiting + 1 == Self.capacity / 2 ? .storedHalfFull : .stored
    }

    /// Consumer: every value waiting, oldest first.
    func drain(_ body: (UInt64) -> Void) {
        let from = tail.load(ordering: .relaxed)
        let to = head.load(ordering: .acquiring)
        guard to != from else { return }
        var position = from
        while position != to {
            body(slots[position & (Self.capacity - 1)])
            position &+= 1
        }
        tail.store(to, ordering: .releasing)
    }
}
