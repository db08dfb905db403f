import Glibc

/// A pthread mutex, the lock style of RunLoopCore (Sources/RunLoopCore/Platform/Lock.swift): the loop and recorder
/// tests run under ThreadSanitizer, which must see every lock their helpers take.
public final class TestLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A mutable value shared between a test and the threads or closures it starts.
public final class Shared<Value>: @unchecked Sendable {
    private let lock = TestLock()
    private var storage: Value

    public init(_ value: Value) { storage = value }

    public var value: Value {
        get { lock.withLock { storage } }
        set { lock.withLock { storage = newValue } }
    }

    /// Reads and changes the value in one step (`value += 1` would be a read and a separate write).
    @discardableResult
    public func mutate<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&storage) }
    }
}

/// One embedded recording (and one installed sink, one `Loop.stallThreshold`) at a time per process: every test
/// target runs in the same process, and tests that record, in any of them, take this lock.
public let recordingLock = TestLock()

/// One LTTng session at a time among those that take it, in any test target: a session tracking this process
/// records every event this process emits, another such session's included, and a recording that follows
/// children records every process, so a flood of events elsewhere fills its buffers. The tests that record this
/// process, follow children, or flood take it (before `recordingLock` when they take both).
public let lttngSessionLock = TestLock()
