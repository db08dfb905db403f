import Glibc

/// A mutex with a condition variable on CLOCK_MONOTONIC.
///
/// RunLoopCore keeps one per loop (guarding the mode tables, the block queue and the run stack)
/// and one per port (guarding its message queue). Callouts never run while one is held.
final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        var mutexAttributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&mutexAttributes)
        // Error checking in debug builds turns a re-entrant lock (our bug) into a crash, not a hang.
        assert(pthread_mutexattr_settype(&mutexAttributes, Int32(PTHREAD_MUTEX_ERRORCHECK)) == 0)
        precondition(pthread_mutex_init(mutex, &mutexAttributes) == 0, "BUG IN RunLoopCore (please report): pthread_mutex_init failed")
        pthread_mutexattr_destroy(&mutexAttributes)
        var conditionAttributes = pthread_condattr_t()
        pthread_condattr_init(&conditionAttributes)
        pthread_condattr_setclock(&conditionAttributes, CLOCK_MONOTONIC)
        precondition(pthread_cond_init(condition, &conditionAttributes) == 0, "BUG IN RunLoopCore (please report): pthread_cond_init failed")
        pthread_condattr_destroy(&conditionAttributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    @inline(__always)
    func lock() {
        let rc = pthread_mutex_lock(mutex)
        assert(rc == 0, "BUG IN RunLoopCore (please report): pthread_mutex_lock returned \(rc)")
    }

    @inline(__always)
    func unlock() {
        let rc = pthread_mutex_unlock(mutex)
        assert(rc == 0, "BUG IN RunLoopCore (please report): pthread_mutex_unlock returned \(rc)")
    }

    @inline(__always)
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits on the condition (lock held) until signalled or until `deadline` (monotonic ns; nil: forever).
    /// Returns false when the deadline passed.
    func wait(until deadline: UInt64?) -> Bool {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return true
        }
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &spec) != ETIMEDOUT
    }

    func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
