import Synchronization

/// An observer: called at the activities it watches, in the modes it is added to.
///
/// Observers of one mode are called in ascending `order`, equal orders in the order they were added. Each pass
/// works on a snapshot: an observer added during the pass is not called in it, one invalidated earlier in the
/// pass is skipped. A non-repeating observer is invalidated right after its first callout, and an observer
/// inside its own callout is not called again by a nested run it starts. Observers alone do not keep a mode
/// alive.
public final class LoopObserver: @unchecked Sendable {
    /// A process-unique id, as trace events report it.
    public let id: UInt64
    /// The activities the observer is called for.
    public let activities: Loop.Activity
    /// Whether it stays valid after its first callout.
    public let repeats: Bool
    /// Observers with a lower order are called first.
    public let order: Int
    /// A name for traces and summaries.
    public let label: String?

    let handler: @Sendable (LoopObserver, Loop.Activity) -> Void
    let binding = Binding()
    private let valid = Atomic<Bool>(true)
    /// Insertion sequence for stable ordering of equal orders. Guarded by the owning loop's lock.
    var sequence: UInt64 = 0
    /// Modes the observer is in. Guarded by the owning loop's lock.
    var modes: Set<Loop.Mode> = []
    /// True while its callout runs (loop thread only).
    var isFiring = false

    /// Creates an observer.
    /// - Parameters:
    ///   - activities: the activities to be called for.
    ///   - repeats: false to be invalidated after the first callout.
    ///   - order: observers with a lower order are called first.
    ///   - label: a name for traces and summaries.
    ///   - handler: called on the loop's thread with the observer and the activity.
    public init(activities: Loop.Activity, repeats: Bool = true, order: Int = 0, label: String? = nil,
                _ handler: @escaping @Sendable (LoopObserver, Loop.Activity) -> Void) {
        self.id = Sequence.next()
        self.activities = activities
        self.repeats = repeats
        self.order = order
        self.label = label
        self.handler = handler
    }

    /// Whether the observer will still be called.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Removes the observer from every mode for good.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        binding.withStateLocked { loop in
            _ = loop?.detach(self)
        }
    }
}
