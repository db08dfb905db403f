import Synchronization

/// Which loop an item (timer, source, observer, port) belongs to.
///
/// An item belongs to at most one loop at a time: it binds to a loop when first added and is released when it
/// leaves the loop's last mode, is invalidated, or the loop's thread exits. While bound, the item's mutable
/// scheduling state is guarded by that loop's lock; while unbound, by this binding's own mutex.
/// Lock order: loop lock, then binding mutex.
final class Binding: @unchecked Sendable {
    /// A pthread mutex, which ThreadSanitizer understands (Synchronization's `Mutex` is invisible to it on Linux).
    private let mutex = ConditionLock()
    private var current: Loop?

    private func withOwner<T>(_ body: (inout Loop?) -> T) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return body(&current)
    }

    var loop: Loop? {
        withOwner { $0 }
    }

    /// Binds to `loop` (caller holds `loop`'s lock). Returns false when bound to another loop.
    func bind(to loop: Loop) -> Bool {
        withOwner { current in
            if let current { return current === loop }
            current = loop
            return true
        }
    }

    /// Releases the item (caller holds the owning loop's lock).
    func release() {
        withOwner { $0 = nil }
    }

    /// Runs `body` with the item's scheduling state locked: under the owning loop's lock (passed to `body`) when
    /// bound, under the binding mutex (`body` gets nil) when not.
    @discardableResult
    func withStateLocked<T>(_ body: (Loop?) -> T) -> T {
        while true {
            // Unbound: the binding mutex alone guards the state, and binding needs it too.
            var result: T?
            let bound: Loop? = withOwner { current in
                if current == nil { result = body(nil) }
                return current
            }
            guard let bound else { return result! }
            bound.lock.lock()
            let stillBound = withOwner { $0 === bound }
            if stillBound {
                let value = body(bound)
                bound.lock.unlock()
                return value
            }
            bound.lock.unlock()
        }
    }
}

/// A process-wide counter for item ids and tie-breaking sequence numbers (ids start at 1; 0 means none).
enum Sequence {
    private static let counter = Atomic<UInt64>(0)

    static func next() -> UInt64 {
        counter.add(1, ordering: .relaxed).newValue
    }
}
