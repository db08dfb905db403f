import DequeModule
import Synchronization

/// A message port between threads (the NSMachPort / NSMessagePort / CFMessagePort analogue).
///
/// A port scheduled in a loop delivers its messages to its handler on that loop's thread, in send order, none
/// lost or duplicated while the port is valid: one at a time, and only while the port is in the running mode
/// (a handler that removes it leaves the rest queued; one that invalidates it drops them). Sending works from any thread and wakes the loop. A port can be
/// registered under a unique name and looked up by it, and ``sendRequest(msgid:data:sendTimeout:receiveTimeout:)``
/// sends a message with a private reply port and waits for the reply.
///
/// A port that is not scheduled in a loop can be read directly with ``receive(timeout:)``. The queue holds at
/// most `capacity` messages; a sender finding it full waits for room, up to its send timeout, except on the
/// thread of the loop the port is scheduled in, where it fails at once (only that loop would make room).
public final class LoopPort: @unchecked Sendable {
    /// One message: an id, bytes, and optionally a port to reply to.
    public struct Message: Sendable {
        public var msgid: Int32
        public var data: [UInt8]
        public var replyPort: LoopPort?

        public init(msgid: Int32, data: [UInt8] = [], replyPort: LoopPort? = nil) {
            self.msgid = msgid
            self.data = data
            self.replyPort = replyPort
        }
    }

    /// Why a port operation failed.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The port was invalidated (before or while waiting).
        case invalidPort
        /// The queue stayed full for the whole send timeout.
        case sendTimedOut
        /// The queue is full and the sender is the thread of the loop that empties it: waiting would never end.
        case queueFullOnLoopThread
        /// No message arrived within the receive timeout.
        case receiveTimedOut
        /// Another valid port is registered under this name.
        case nameInUse(String)

        public var description: String {
            switch self {
            case .invalidPort: return "the port is invalid"
            case .sendTimedOut: return "the port's queue stayed full for the whole send timeout"
            case .queueFullOnLoopThread:
                return "the port's queue is full and only the sending thread's own loop empties it"
            case .receiveTimedOut: return "no message arrived within the receive timeout"
            case .nameInUse(let name): return "a port is already registered as \"\(name)\""
            }
        }
    }

    /// A process-unique id, as trace events report it.
    public let id: UInt64
    /// How many messages may wait in the queue.
    public let capacity: Int
    /// Ready ports with a lower order are handled first.
    public let order: Int
    /// A name for traces and summaries.
    public let label: String?

    let handler: (@Sendable (LoopPort, Message) -> Void)?
    let binding = Binding()
    /// Modes the port is in. Guarded by the owning loop's lock.
    var modes: Set<Loop.Mode> = []

    private let queueLock = ConditionLock()
    // Guarded by queueLock.
    private var queue = Deque<(message: Message, sentAt: UInt64)>()
    private var deliveringLoop: Loop?
    private var registeredName: String?
    private var validFlag = true
    /// The queue's length, readable without the lock by the loop's "which ports are ready" scan.
    private let pending = Atomic<Int>(0)

    /// Creates a port.
    /// - Parameters:
    ///   - capacity: how many messages may wait; senders wait (up to their timeout) when it is full.
    ///   - order: ready ports with a lower order are handled first.
    ///   - label: a name for traces and summaries.
    ///   - handler: called on the loop's thread for each message once the port is scheduled; nil for a port
    ///     read with ``receive(timeout:)``.
    public init(capacity: Int = 4096, order: Int = 0, label: String? = nil,
                _ handler: (@Sendable (LoopPort, Message) -> Void)? = nil) {
        requireUsage(capacity > 0, "LoopPort: capacity must be at least 1 (got \(capacity))")
        self.id = Sequence.next()
        self.capacity = capacity
        self.order = order
        self.label = label
        self.handler = handler
    }

    /// Whether the port still accepts and delivers messages.
    public var isValid: Bool { queueLock.withLock { validFlag } }

    /// The name the port is registered under, if any.
    public var name: String? { queueLock.withLock { registeredName } }

    /// How many messages are waiting.
    public var queuedCount: Int { pending.load(ordering: .acquiring) }

    // ===== naming =====

    private static let registry = PortRegistry()

    /// Registers the port under `name`, unique in this process, until the port is invalidated.
    /// - Throws: ``Failure/nameInUse(_:)`` when another valid port has the name, ``Failure/invalidPort``.
    public func register(name: String) throws(Failure) {
        requireUsage(!name.isEmpty, "LoopPort.register(name:): the name must not be empty")
        let result: Failure? = LoopPort.registry.withLock { table in
            if let existing = table[name], existing !== self { return .nameInUse(name) }
            let ok = queueLock.withLock { () -> Bool in
                guard validFlag else { return false }
                if let old = registeredName, old != name { table[old] = nil }
                registeredName = name
                return true
            }
            guard ok else { return .invalidPort }
            table[name] = self
            return nil
        }
        if let result { throw result }
    }

    /// The valid port registered under `name`, if any.
    public static func lookUp(name: String) -> LoopPort? {
        registry.withLock { $0[name] }
    }

    // ===== sending =====

    /// Queues a message for the port's handler (or ``receive(timeout:)``) and wakes its loop if it sleeps in a
    /// mode the port is in.
    /// - Parameters:
    ///   - msgid: the message's number, for the handler to tell messages apart.
    ///   - data: its bytes.
    ///   - replyPort: where the handler may send its reply (request/reply), or nil.
    ///   - timeout: how long to wait for room when the queue is full; nil waits as long as it takes.
    /// - Throws: ``Failure/invalidPort``, ``Failure/sendTimedOut``, ``Failure/queueFullOnLoopThread`` (at once,
    ///   on the thread of the loop the port is scheduled in).
    public func send(msgid: Int32, data: [UInt8] = [], replyTo replyPort: LoopPort? = nil,
                     timeout: Duration? = nil) throws(Failure) {
        try send(Message(msgid: msgid, data: data, replyPort: replyPort), timeout: timeout)
    }

    /// Queues a message; see ``send(msgid:data:replyTo:timeout:)``.
    public func send(_ message: Message, timeout: Duration? = nil) throws(Failure) {
        let deadline = LoopPort.deadline(after: timeout, what: "send timeout")
        queueLock.lock()
        while validFlag && queue.count >= capacity {
            // Only this thread's loop would make room, and it is busy sending (rule 21a).
            if let loop = deliveringLoop, loop.isOwnedByCurrentThread {
                queueLock.unlock()
                throw .queueFullOnLoopThread
            }
            if !queueLock.wait(until: deadline) && queue.count >= capacity {
                queueLock.unlock()
                throw .sendTimedOut
            }
        }
        guard validFlag else {
            queueLock.unlock()
            throw .invalidPort
        }
        queue.append((message, monotonicNanoseconds()))
        pending.add(1, ordering: .releasing)
        let loop = deliveringLoop
        queueLock.broadcast()
        queueLock.unlock()
        loop?.portDidReceive(self)
    }

    /// Sends a request with a private reply port and waits for the reply.
    ///
    /// The caller's thread blocks; the port must be served by another thread's loop.
    /// - Throws: ``Failure/sendTimedOut``, ``Failure/receiveTimedOut``, ``Failure/invalidPort``.
    public func sendRequest(msgid: Int32, data: [UInt8] = [], sendTimeout: Duration? = nil,
                            receiveTimeout: Duration? = nil) throws(Failure) -> Message {
        if let servingLoop = queueLock.withLock({ deliveringLoop }) {
            requireUsage(!servingLoop.isOwnedByCurrentThread,
                         "LoopPort.sendRequest: the port is served by the calling thread's own loop, so the reply could never be handled; send from another thread")
        }
        let replyPort = LoopPort(capacity: 1)
        defer { replyPort.invalidate() }
        try send(Message(msgid: msgid, data: data, replyPort: replyPort), timeout: sendTimeout)
        return try replyPort.receive(timeout: receiveTimeout)
    }

    /// Takes the next message, waiting up to `timeout` (nil: forever). For ports not scheduled in a loop.
    /// - Throws: ``Failure/receiveTimedOut``, ``Failure/invalidPort``.
    public func receive(timeout: Duration? = nil) throws(Failure) -> Message {
        let deadline = LoopPort.deadline(after: timeout, what: "receive timeout")
        queueLock.lock()
        defer { queueLock.unlock() }
        requireUsage(deliveringLoop == nil,
                     "LoopPort.receive: the port is scheduled in a loop, which delivers its messages to the handler")
        while validFlag && queue.isEmpty {
            if !queueLock.wait(until: deadline) && queue.isEmpty {
                throw .receiveTimedOut
            }
        }
        guard validFlag else { throw .invalidPort }
        pending.subtract(1, ordering: .releasing)
        let message = queue.removeFirst().message
        queueLock.broadcast()
        return message
    }

    /// Stops the port for good: unregisters its name, removes it from its loop, drops queued messages and
    /// fails waiting senders and receivers with ``Failure/invalidPort``.
    public func invalidate() {
        let name: String? = queueLock.withLock {
            guard validFlag else { return nil }
            validFlag = false
            pending.store(0, ordering: .releasing)
            queue.removeAll()
            queueLock.broadcast()
            return registeredName ?? ""
        }
        guard let name else { return }
        if !name.isEmpty {
            LoopPort.registry.withLock { table in
                if table[name] === self { table[name] = nil }
            }
        }
        binding.withStateLocked { loop in
            _ = loop?.detach(self)
        }
    }

    // ===== delivery (loop side) =====

    /// Starts (loop non-nil) or stops delivering to a loop.
    func setDeliveringLoop(_ loop: Loop?) {
        queueLock.withLock { deliveringLoop = loop }
    }

    /// Takes the oldest queued message for the handler, with its send time.
    func takeMessage() -> (message: Message, sentAt: UInt64)? {
        queueLock.withLock {
            guard let first = queue.popFirst() else { return nil }
            pending.subtract(1, ordering: .releasing)
            queueLock.broadcast()
            return first
        }
    }

    private static func deadline(after timeout: Duration?, what: String) -> UInt64? {
        guard let timeout else { return nil }
        requireUsage(timeout >= .zero, "LoopPort: the \(what) must not be negative (got \(timeout))")
        return Loop.Instant.now.advanced(by: timeout).nanoseconds
    }
}

/// The process's named ports, under a pthread mutex (visible to ThreadSanitizer).
final class PortRegistry: @unchecked Sendable {
    private let lock = ConditionLock()
    private var table: [String: LoopPort] = [:]

    func withLock<T>(_ body: (inout [String: LoopPort]) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&table)
    }
}
