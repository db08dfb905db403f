import Synchronization

/// A descriptor source (CFRunLoop's "version 1"): a file descriptor whose readiness wakes the loop by itself.
///
/// The handler runs on the loop's thread with what is ready and reads or writes the data itself; nothing is
/// read on its behalf, so no byte is lost. Readiness is level-triggered: a descriptor still readable after the
/// handler returns is reported again on the next iteration. The source never closes a descriptor; that stays
/// the caller's.
public final class DescriptorSource: @unchecked Sendable {
    /// What a descriptor is watched for, and what the handler is told is ready.
    public struct Events: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let readable = Events(rawValue: 1)
        public static let writable = Events(rawValue: 2)
        /// The peer hung up (reported whatever the interest).
        public static let hangUp = Events(rawValue: 4)
        /// An error is pending on the descriptor (reported whatever the interest).
        public static let error = Events(rawValue: 8)
    }

    /// A process-unique id, as trace events report it.
    public let id: UInt64
    /// The watched descriptor (the caller's: never closed here).
    public let fileDescriptor: Int32
    /// What the descriptor is watched for.
    public let events: Events
    /// Ready sources with a lower order are handled first.
    public let order: Int
    /// A name for traces and summaries.
    public let label: String?

    let handler: @Sendable (DescriptorSource, Events) -> Void
    let binding = Binding()
    private let valid = Atomic<Bool>(true)
    /// Modes the source is in. Guarded by the owning loop's lock.
    var modes: Set<Loop.Mode> = []

    /// Creates a source for an open descriptor.
    /// - Parameters:
    ///   - fileDescriptor: an open descriptor that epoll can watch (a pipe, socket, eventfd, terminal…).
    ///   - events: `.readable`, `.writable` or both.
    ///   - order: ready sources with a lower order are handled first.
    ///   - label: a name for traces and summaries.
    ///   - handler: called on the loop's thread with the source and what is ready.
    public init(fileDescriptor: Int32, events: Events = .readable, order: Int = 0, label: String? = nil,
                _ handler: @escaping @Sendable (DescriptorSource, Events) -> Void) {
        requireUsage(isOpenDescriptor(fileDescriptor),
                     "DescriptorSource: \(fileDescriptor) is not an open file descriptor of this process")
        requireUsage(!events.intersection([.readable, .writable]).isEmpty,
                     "DescriptorSource: watch for .readable, .writable or both (got \(events.rawValue))")
        self.id = Sequence.next()
        self.fileDescriptor = fileDescriptor
        self.events = events.intersection([.readable, .writable])
        self.order = order
        self.label = label
        self.handler = handler
    }

    /// Whether the source is still watched when scheduled.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Stops watching the descriptor in every mode. Does not close it.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        binding.withStateLocked { loop in
            _ = loop?.detach(self)
        }
    }

    var epollInterest: Readiness {
        var interest: Readiness = [.hangUp]
        if events.contains(.readable) { interest.insert(.readable) }
        if events.contains(.writable) { interest.insert(.writable) }
        return interest
    }

    static func events(from readiness: Readiness) -> Events {
        var events: Events = []
        if readiness.contains(.readable) { events.insert(.readable) }
        if readiness.contains(.writable) { events.insert(.writable) }
        if !readiness.intersection(.hangUp).isEmpty { events.insert(.hangUp) }
        if readiness.contains(.error) { events.insert(.error) }
        return events
    }
}
