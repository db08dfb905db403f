import Glibc
import Synchronization

/// A descriptor source (CFRunLoop's "version 1"): a file descriptor whose readiness wakes the loop by itself.
///
/// The handler runs on the loop's thread with what is ready and reads or writes the data itself; nothing is
/// read on its behalf, so no byte is lost. Readiness is level-triggered: a descriptor still readable after the
/// handler returns is reported again on the next iteration, and it is current: readiness a nested run consumed
/// is not handed to the handler again by the outer pass. The source never closes a descriptor; that stays the
/// caller's, and the cancel handler says when it may: once it has run (or once ``invalidate()`` returned on the
/// loop's thread) the handler is never called again.
///
/// A descriptor the kernel refuses when the source is added (closed meanwhile by another thread: EBADF, or
/// already watched in that mode by another source: EEXIST) is not a fatal error: the add does nothing, the
/// source is invalidated (its cancel handler runs) and ``watchFailure`` says why.
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

    /// Why the kernel refused to watch the descriptor in a mode.
    public struct WatchFailure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The errno of `epoll_ctl`: EBADF (closed), EEXIST (already watched in the mode), ENOMEM, ENOSPC…
        public let errno: Int32
        /// The mode the source was being added to.
        public let mode: Loop.Mode

        public var description: String {
            "descriptor refused in mode \(mode): \(String(cString: strerror(errno))) (errno \(errno))"
        }
    }

    let handler: @Sendable (DescriptorSource, Events) -> Void
    let cancel: (@Sendable (DescriptorSource) -> Void)?
    let binding = Binding()
    private let valid = Atomic<Bool>(true)
    /// Handler calls in progress (nested runs may call it again from inside itself). With `valid`, a Dekker-style
    /// handshake (both sequentially consistent): the cancel handler runs once no call is in progress and none
    /// can start.
    private let callsInProgress = Atomic<Int>(0)
    private let cancelClaimed = Atomic<Bool>(false)
    private let failureLock = ConditionLock()
    private var failure: WatchFailure?
    /// Modes the source is in. Guarded by the owning loop's lock.
    var modes: Set<Loop.Mode> = []

    /// Creates a source for an open descriptor.
    /// - Parameters:
    ///   - fileDescriptor: an open descriptor that epoll can watch (a pipe, socket, eventfd, terminal…).
    ///   - events: `.readable`, `.writable` or both.
    ///   - order: ready sources with a lower order are handled first.
    ///   - label: a name for traces and summaries.
    ///   - cancel: called once after the source is invalidated, when its handler is not running and never will
    ///     again: by ``invalidate()`` before it returns, or on the loop's thread as the handler call in progress
    ///     returns. The place to close the descriptor.
    ///   - handler: called on the loop's thread with the source and what is ready.
    public init(fileDescriptor: Int32, events: Events = .readable, order: Int = 0, label: String? = nil,
                cancel: (@Sendable (DescriptorSource) -> Void)? = nil,
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
        self.cancel = cancel
    }

    /// Whether the source is still watched when scheduled.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Why the kernel last refused to watch the descriptor (the add then did nothing and invalidated the source).
    public var watchFailure: WatchFailure? {
        failureLock.withLock { failure }
    }

    /// Stops watching the descriptor in every mode, for good. Does not close it. Safe from any thread; a handler
    /// call in progress on the loop's thread finishes, and none starts afterwards.
    public func invalidate() {
        guard valid.exchange(false, ordering: .sequentiallyConsistent) else { return }
        binding.withStateLocked { loop in
            _ = loop?.detach(self)
        }
        if callsInProgress.load(ordering: .sequentiallyConsistent) == 0 { runCancelOnce() }
    }

    // ===== handler calls (loop side) =====

    /// Starts a handler call; false when the source was invalidated (then no call may start).
    func beginCall() -> Bool {
        callsInProgress.add(1, ordering: .sequentiallyConsistent)
        if valid.load(ordering: .sequentiallyConsistent) { return true }
        endCall()
        return false
    }

    /// Ends a handler call; the last one to end after an invalidation runs the cancel handler.
    func endCall() {
        let remaining = callsInProgress.subtract(1, ordering: .sequentiallyConsistent).newValue
        if remaining == 0 && !valid.load(ordering: .sequentiallyConsistent) { runCancelOnce() }
    }

    private func runCancelOnce() {
        guard !cancelClaimed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        cancel?(self)
    }

    func recordWatchFailure(_ failure: WatchFailure) {
        failureLock.withLock { self.failure = failure }
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
